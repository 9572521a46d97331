package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/llmrun/llmrun/job"
)

// DefaultConfig is the config file read when --config names none and it
// exists in the working directory.
const DefaultConfig = "llmrun.yaml"

// configurable marks the commands the config file applies to. Batch and
// estimate take every default, and a default naming none of their flags
// is an error (a misspelt flag must not be silently ignored); a command
// marked configOwnFlags (cache) takes the defaults naming its flags and
// leaves the rest to the commands that have them.
const configurable = "llmrun/config"

// configOwnFlags is configurable's value for a command that takes only
// the defaults naming its own flags.
const configOwnFlags = "own flags"

// configFile is the config file as written. Unknown fields are errors
// (a misspelt "rmp" must not be silently ignored).
type configFile struct {
	// Defaults give any flag of the command a value, by its long name;
	// flags given on the command line win.
	Defaults  yaml.Node                 `yaml:"defaults"`
	Endpoints map[string]endpointConfig `yaml:"endpoints"`
	Pools     map[string]limitsConfig   `yaml:"pools"`
	// Cache is the cross-run cache (cache.go): defaults for --cache….
	Cache yaml.Node `yaml:"cache"`
	// ModelMap renames the models lines name: {claude-sonnet-4-5:
	// gemini-2.5-pro} sends claude-sonnet-4-5 lines as gemini-2.5-pro.
	ModelMap map[string]string `yaml:"model_map"`
}

type endpointConfig struct {
	Provider   string            `yaml:"provider"`
	BaseURL    string            `yaml:"base_url"`
	KeyEnv     string            `yaml:"key_env"`
	APIVersion string            `yaml:"api_version"`
	Model      string            `yaml:"model"`
	Headers    map[string]string `yaml:"headers"`
	Pool       string            `yaml:"pool"`
	Limits     *limitsConfig     `yaml:"limits"`
}

type limitsConfig struct {
	RPM         float64 `yaml:"rpm"`
	ITPM        float64 `yaml:"itpm"`
	OTPM        float64 `yaml:"otpm"`
	TPM         float64 `yaml:"tpm"`
	Concurrency int     `yaml:"concurrency"`
}

func (l limitsConfig) limits() job.Limits {
	return job.Limits{RPM: l.RPM, ITPM: l.ITPM, OTPM: l.OTPM, TPM: l.TPM, Concurrency: l.Concurrency}
}

// loadedConfig is a config file read and checked: its endpoints and pools
// for the options, and its defaults for the flags.
type loadedConfig struct {
	path      string
	endpoints map[string]job.Endpoint
	pools     map[string]job.Limits
	defaults  []configDefault
	modelMap  map[string]string
}

// configDefault is one default: a flag's name, its value(s), and the line.
type configDefault struct {
	flag   string
	values []string
	list   bool
	line   int
}

// configKey carries a command's loaded config in its context.
type configKey struct{}

// configFrom is the config loaded for the running command, or nil.
func configFrom(ctx context.Context) *loadedConfig {
	if ctx == nil {
		return nil
	}
	cfg, _ := ctx.Value(configKey{}).(*loadedConfig)
	return cfg
}

// loadConfig reads path, or DefaultConfig in the working directory when
// path is "" and it exists (nil when it does not).
func loadConfig(path string) (*loadedConfig, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultConfig
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return nil, nil
	}
	if err != nil {
		return nil, &job.UsageError{Err: fmt.Errorf("--config %s: %v", path, job.PlainPathError(err))}
	}
	return parseConfig(path, data)
}

// yamlLine matches the line of a yaml error; yamlType the Go type it
// names, which means nothing to a user.
var (
	yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+): `) })
	yamlType = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(` (in|into) (type )?(cmd\.\w+|map\[[^ ]*|\[\][^ ]*|\*?[a-z0-9.]+)$`)
	})
)

func parseConfig(path string, data []byte) (*loadedConfig, error) {
	bad := func(format string, args ...any) error {
		return &job.UsageError{Err: fmt.Errorf(path+":"+format, args...)}
	}
	var f configFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, bad("%s", yamlMessage(err))
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	if line, key := duplicateKey(&root); line > 0 {
		return nil, bad("%d: %s is given twice (the last would silently win): give it once", line, key)
	}
	lines := endpointLines(&root)
	poolLines := mappingLines(&root, "pools")
	cfg := &loadedConfig{path: path, endpoints: map[string]job.Endpoint{}, pools: map[string]job.Limits{}, modelMap: f.ModelMap}
	for from, to := range f.ModelMap {
		if from == "" || to == "" {
			return nil, bad(" model_map: %q: %q: want a model name on both sides", from, to)
		}
	}
	for name, p := range f.Pools {
		l := p.limits()
		l.Where = fmt.Sprintf("%s:%d: pool %s", path, poolLines[name], name)
		cfg.pools[name] = l
	}
	for name, e := range f.Endpoints {
		where := fmt.Sprintf("%s:%d", path, lines[name])
		if e.Provider == "" {
			return nil, &job.UsageError{Err: fmt.Errorf("%s: endpoint %s: provider is missing (openai, anthropic, azure, …)", where, name)}
		}
		ep := job.Endpoint{Provider: e.Provider, BaseURL: e.BaseURL, KeyEnv: e.KeyEnv, APIVersion: e.APIVersion,
			Model: e.Model, Headers: e.Headers, Pool: e.Pool, Where: where}
		if e.Limits != nil {
			l := e.Limits.limits()
			l.Where = where + ": endpoint " + name
			ep.Limits = &l
		}
		cfg.endpoints[name] = ep
	}
	d := &f.Defaults
	if d.Kind != 0 && d.Kind != yaml.MappingNode {
		return nil, bad("%d: defaults: want a mapping of flag names to values", d.Line)
	}
	for i := 0; i+1 < len(d.Content); i += 2 {
		k, v := d.Content[i], d.Content[i+1]
		def := configDefault{flag: k.Value, line: k.Line}
		switch v.Kind {
		case yaml.ScalarNode:
			def.values = []string{v.Value}
		case yaml.SequenceNode:
			def.list = true
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return nil, bad("%d: defaults: %s: want a list of plain values", item.Line, k.Value)
				}
				def.values = append(def.values, item.Value)
			}
		default:
			return nil, bad("%d: defaults: %s: want a value or a list of values", v.Line, k.Value)
		}
		cfg.defaults = append(cfg.defaults, def)
	}
	cd, err := cacheDefaults(&f.Cache)
	if err != nil {
		return nil, bad("%v", err)
	}
	cfg.defaults = append(cfg.defaults, cd...)
	return cfg, nil
}

// yamlMessage is a yaml error as "LINE: what", without the library's
// framing and Go type names.
// duplicateKey finds a mapping that names a key twice, anywhere in the
// document: the line of the second one and its dotted path; 0 if none.
// yaml's decoder lets the last win in the defaults (read as nodes).
func duplicateKey(n *yaml.Node) (int, string) {
	var walk func(n *yaml.Node, path string) (int, string)
	walk = func(n *yaml.Node, path string) (int, string) {
		if n.Kind == yaml.MappingNode {
			seen := map[string]bool{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				name := strings.TrimPrefix(path+"."+k.Value, ".")
				if seen[k.Value] {
					return k.Line, name
				}
				seen[k.Value] = true
				if line, key := walk(n.Content[i+1], name); line > 0 {
					return line, key
				}
			}
			return 0, ""
		}
		for _, c := range n.Content {
			if line, key := walk(c, path); line > 0 {
				return line, key
			}
		}
		return 0, ""
	}
	return walk(n, "")
}

func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if m := yamlLine().FindStringSubmatchIndex(l); m != nil && m[0] == 0 {
			l = l[m[2]:m[3]] + ": " + l[m[1]:]
		}
		l = yamlType().ReplaceAllString(l, "")
		l = strings.Replace(l, "field ", "unknown field ", 1)
		l = strings.Replace(l, " not found", "", 1)
		parts = append(parts, l)
	}
	return strings.Join(parts, "; ")
}

// endpointLines maps each endpoint's name to its line in the file.
func endpointLines(root *yaml.Node) map[string]int { return mappingLines(root, "endpoints") }

// mappingLines maps the names under the top-level mapping section to the
// lines that name them.
func mappingLines(root *yaml.Node, section string) map[string]int {
	out := map[string]int{}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return out
	}
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != section || top.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		eps := top.Content[i+1]
		for j := 0; j+1 < len(eps.Content); j += 2 {
			out[eps.Content[j].Value] = eps.Content[j].Line
		}
	}
	return out
}

// apply gives each flag of fs named in the defaults its value, unless
// the command line set it: flags override the file. A default naming no
// flag of fs is an error, unless ownOnly (it is meant for another command).
func (cfg *loadedConfig) apply(fs *pflag.FlagSet, ownOnly bool) error {
	for _, d := range cfg.defaults {
		f := fs.Lookup(d.flag)
		if f == nil && ownOnly {
			continue
		}
		if f == nil {
			msg := fmt.Sprintf("%s:%d: defaults: unknown flag %q", cfg.path, d.line, d.flag)
			if near := nearestFlag(fs, d.flag); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			return &job.UsageError{Err: errors.New(msg)}
		}
		if f.Changed || d.flag == "config" {
			continue
		}
		var err error
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			err = sv.Replace(d.values)
		} else if d.list {
			err = errors.New("takes one value, not a list")
		} else {
			err = f.Value.Set(d.values[0])
		}
		if err != nil {
			return &job.UsageError{Err: fmt.Errorf("%s:%d: defaults: %s: %v", cfg.path, d.line, d.flag, err)}
		}
	}
	return nil
}

// useConfig loads the config file for c, if c takes one, applies its
// defaults to c's flags and carries its endpoints in c's context.
func useConfig(c *cobra.Command, path string) error {
	if c.Annotations[configurable] == "" {
		return nil
	}
	cfg, err := loadConfig(path)
	if err != nil || cfg == nil {
		return err
	}
	if err := cfg.apply(c.Flags(), c.Annotations[configurable] == configOwnFlags); err != nil {
		return err
	}
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c.SetContext(context.WithValue(ctx, configKey{}, cfg))
	return nil
}
