package job

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
)

// Endpoint is a named endpoint of the config file: a provider at a base
// URL, with its own key, headers, api-version, model and budget. --provider
// and --fallback hops may name one instead of a provider.
type Endpoint struct {
	// Provider is the registry's name for how to talk to it (openai,
	// anthropic, azure, …).
	Provider, BaseURL string
	// KeyEnv names the environment variable holding its key ("" for the
	// provider's usual ones).
	KeyEnv     string
	APIVersion string
	// Model is the hop's model (for the primary: the model of lines that
	// name none).
	Model string
	// Headers are extra headers; a value may hold ${VAR}, read from the
	// environment, so that secrets stay out of the file.
	Headers map[string]string
	// Pool names the budget it shares (Pools); Limits, when set, give it
	// a budget of its own (named after the endpoint unless Pool is set).
	Pool   string
	Limits *Limits
	// Where is where it was defined (file:line), for messages.
	Where string
}

// Limits are a budget's numbers from the config file: per-minute rates
// (0: no bucket for that dimension) and a concurrency cap (0: --concurrency).
type Limits struct {
	RPM, ITPM, OTPM, TPM float64
	Concurrency          int
	// Where names it in messages (file:line: pool or endpoint name).
	Where string
}

// endpoint returns the endpoint called name, if the config file has one.
func (o *BatchOptions) endpoint(name string) (Endpoint, bool) {
	ep, ok := o.Endpoints[name]
	return ep, ok
}

// at is where the route to ep goes: its base URL (baseURL, from the
// flag, wins), key variable, api-version and headers with ${VAR}
// expanded.
func (ep Endpoint) at(name, baseURL string, getenv func(string) string) (registry.Endpoint, error) {
	at := registry.Endpoint{BaseURL: ep.BaseURL, KeyEnv: ep.KeyEnv, APIVersion: ep.APIVersion}
	if baseURL != "" {
		at.BaseURL = baseURL
	}
	if len(ep.Headers) > 0 {
		at.Header = make(http.Header, len(ep.Headers))
		for k, v := range ep.Headers {
			var missing []string
			v = os.Expand(v, func(n string) string {
				n, def, hasDef := strings.Cut(n, ":-") // ${VAR:-default}, as the shell has it
				val := getenv(n)
				if val == "" && hasDef {
					val = def
				}
				if val == "" && !hasDef {
					missing = append(missing, n)
				}
				return val
			})
			if len(missing) > 0 {
				return at, usagef("%s: endpoint %s: header %s needs %s, which is not set", ep.Where, name, k, strings.Join(missing, ", "))
			}
			if !validHeaderName(k) || !validHeaderValue(v) {
				return at, usagef("%s: endpoint %s: header %s is not a valid header", ep.Where, name, k)
			}
			at.Header.Set(k, v)
		}
	}
	if ep.KeyEnv != "" && !envVarName(ep.KeyEnv) {
		// Never echoed: what is there is most likely the key itself.
		return at, usagef("%s: endpoint %s: key_env must name an environment variable (such as OPENAI_API_KEY), and what it holds looks like a key, not a name; put the key in that variable (not shown here)", ep.Where, name)
	}
	if ep.KeyEnv != "" && strings.TrimSpace(getenv(ep.KeyEnv)) == "" && !strings.HasPrefix(ep.Provider, "mock") {
		return at, usagef("%s: endpoint %s: its key variable %s is not set", ep.Where, name, ep.KeyEnv)
	}
	return at, nil
}

// routeTo builds the route called name: a named endpoint of the config
// file, else a provider of the registry ("" infers it). baseURL (the
// flag) overrides the endpoint's. It also returns the endpoint's model
// ("" for a bare provider).
func (b *batch) routeTo(name string, shape providers.Format, baseURL string) (runner.Route, registry.Entry, registry.Endpoint, string, error) {
	ep, ok := b.o.endpoint(name)
	if !ok {
		rt, entry, err := b.route(name, shape, baseURL)
		return rt, entry, registry.Endpoint{BaseURL: baseURL}, "", err
	}
	at, err := ep.at(name, baseURL, b.io.Getenv)
	if err != nil {
		return runner.Route{}, registry.Entry{}, at, "", err
	}
	rt, entry, err := b.routeAt(ep.Provider, shape, at)
	if err != nil {
		return rt, entry, at, "", fmt.Errorf("%s: endpoint %s: %w", ep.Where, name, err)
	}
	switch {
	case ep.Pool != "":
		rt.Pool = ep.Pool
	case ep.Limits != nil:
		rt.Pool = name
	}
	return rt, entry, at, ep.Model, nil
}

// poolLimits are the budgets the config file gives by name: its pools,
// and the endpoints with limits of their own. Each is the run's defaults
// with the file's numbers in force (no learning: the numbers are given).
func (o *BatchOptions) poolLimits() (map[string]limiter.Limits, error) {
	out := map[string]limiter.Limits{}
	set := func(name string, l Limits) {
		lim := o.limits()
		lim.RPM, lim.ITPM, lim.OTPM, lim.TPM = l.RPM, l.ITPM, l.OTPM, l.TPM
		if l.Concurrency > 0 {
			lim.Concurrency = l.Concurrency
		}
		lim.Auto = l.RPM == 0 && l.ITPM == 0 && l.OTPM == 0 && l.TPM == 0
		out[name] = lim
	}
	for name, l := range o.Pools {
		set(name, l)
	}
	var names []string
	for name := range o.Endpoints {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ep := o.Endpoints[name]
		switch {
		case ep.Pool != "" && ep.Limits != nil:
			return nil, usagef("%s: endpoint %s: give it a pool or limits of its own, not both", ep.Where, name)
		case ep.Pool != "":
			if _, ok := o.Pools[ep.Pool]; !ok {
				return nil, usagef("%s: endpoint %s: no pool %q in the config file", ep.Where, name, ep.Pool)
			}
		case ep.Limits != nil:
			set(name, *ep.Limits)
		}
	}
	return out, nil
}

// envVarName reports whether s reads as an environment variable's name
// rather than a secret: letters, digits and '_', not starting with a
// digit, and not a long run of mixed-case letters and digits with no '_'
// (an API key pasted where its variable's name belongs).
func envVarName(s string) bool {
	lower, digit := false, false
	for i, r := range s {
		switch {
		case r == '_' || r >= 'A' && r <= 'Z':
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9' && i > 0:
			digit = true
		default:
			return false
		}
	}
	return s != "" && !(len(s) >= 20 && lower && digit && !strings.Contains(s, "_"))
}
