package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrun/llmrun/providers/mock"
)

// recorder serves the mock and records each request's auth and gateway
// headers.
type recorder struct {
	mu      sync.Mutex
	auth    map[string]int // Authorization or x-api-key value → requests
	gateway map[string]int // X-Gateway-Key → requests
	agents  map[string]int
}

func recordingMock(t *testing.T, cfg mock.Config) (*recorder, string) {
	rec := &recorder{auth: map[string]int{}, gateway: map[string]int{}, agents: map[string]int{}}
	m := mock.New(cfg)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auth[r.Header.Get("Authorization")+r.Header.Get("x-api-key")]++
		rec.gateway[r.Header.Get("X-Gateway-Key")]++
		rec.agents[strings.SplitN(r.UserAgent(), "/", 2)[0]]++
		rec.mu.Unlock()
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

// TestConfigEndpointsAndFallback: a config file with two named endpoints,
// each with its own key variable, headers and budget, and a fallback
// chain between them, works end to end: the primary (down) gets its key
// and gateway header, the fallback answers everything with its own key.
func TestConfigEndpointsAndFallback(t *testing.T) {
	primary, primaryURL := recordingMock(t, mock.Config{Outage: true})
	backup, backupURL := recordingMock(t, mock.Config{Seed: 1})
	in, prompts := promptFile(t, 20)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "llmrun.yaml")
	cfg := fmt.Sprintf(`
defaults:
  provider: primary
  fallback: [backup]
  concurrency: 4
  max-attempts: 2
  backoff-base: 1ms
  backoff-max: 2ms
  quiet: true
endpoints:
  primary:
    provider: openai
    base_url: %s/v1
    key_env: PRIMARY_KEY
    model: m-primary
    headers:
      X-Gateway-Key: ${GW_TOKEN}
    limits: {rpm: 6000, concurrency: 4}
  backup:
    provider: anthropic
    base_url: %s
    key_env: BACKUP_KEY
    model: claude-backup
    pool: shared
pools:
  shared: {rpm: 3000, itpm: 1000000}
`, primaryURL, backupURL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PRIMARY_KEY": "sk-primary-0123456789", "BACKUP_KEY": "sk-ant-backup-0123456789", "GW_TOKEN": "gw-token-42"}
	sum := filepath.Join(dir, "sum.json")
	c := &cli{env: env}
	if code := c.run(t, "batch", in, "--config", cfgPath, "--summary", sum); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	lines := readLines(t, strings.TrimSuffix(in, ".jsonl")+".out.jsonl")
	if len(lines) != len(prompts) {
		t.Fatalf("%d answers, want %d", len(lines), len(prompts))
	}
	for id, l := range lines {
		if p, m := l.Get("llmrun.provider").Str, l.Get("llmrun.model").Str; p != "anthropic" || m != "claude-backup" {
			t.Fatalf("%s answered by %s %s, want the backup endpoint", id, p, m)
		}
		if got, want := answerText(l), mock.Answer(prompts[id], 40); got != want {
			t.Fatalf("%s: %q, want %q", id, got, want)
		}
	}
	if len(primary.auth) != 1 || primary.auth["Bearer sk-primary-0123456789"] == 0 || primary.gateway["gw-token-42"] == 0 {
		t.Errorf("primary saw auth %v and gateway headers %v; want its own key and the expanded header", primary.auth, primary.gateway)
	}
	if len(backup.auth) != 1 || backup.auth["sk-ant-backup-0123456789"] == 0 || backup.gateway[""] == 0 || len(backup.gateway) != 1 {
		t.Errorf("backup saw auth %v and gateway headers %v; want its own key and no gateway header", backup.auth, backup.gateway)
	}
	var s struct {
		Limits []struct {
			Key         string  `json:"key"`
			RPM         float64 `json:"rpm"`
			Concurrency int     `json:"concurrency"`
		} `json:"limits"`
	}
	b, _ := os.ReadFile(sum)
	json.Unmarshal(b, &s)
	got := map[string]float64{}
	for _, k := range s.Limits {
		got[k.Key] = k.RPM
	}
	if got["primary"] != 6000 || got["shared"] != 3000 {
		t.Errorf("budgets %v; want the primary endpoint's own (rpm 6000) and the shared pool (rpm 3000)", got)
	}
	if strings.Contains(c.stderr.String(), "gw-token-42") {
		t.Errorf("the header's value reached stderr: %s", c.stderr.String())
	}
}

// TestConfigPrecedence: the file's defaults fill flags the command line
// did not give; ./llmrun.yaml is read when --config names none.
func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile(DefaultConfig, []byte(`
defaults:
  concurrency: 3
  max-attempts: 9
  header: ["X-A: 1", "X-B: 2"]
  fallback: anthropic:claude-x
  stream: false
`), 0o644)
	var got *BatchOptions
	var stderr strings.Builder
	io := &IO{In: strings.NewReader(""), Out: &stderr, Err: &stderr, Getenv: func(string) string { return "" }}
	root, stage := newRoot(io)
	for _, c := range root.Commands() {
		if c.Name() == "batch" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newBatchCmd(io, func(o *BatchOptions) error { got = o; return nil }))
	root.SetArgs([]string{"batch", "in.jsonl", "--concurrency", "5"})
	c, err := root.ExecuteC()
	if err = stage.wrap(c, err); err != nil {
		t.Fatal(err)
	}
	if got.Concurrency != 5 || got.MaxAttempts != 9 || got.Stream || strings.Join(got.Headers, ",") != "X-A: 1,X-B: 2" || strings.Join(got.Fallback, ",") != "anthropic:claude-x" {
		t.Errorf("options: concurrency %d (want the flag's 5), max attempts %d (want the file's 9), stream %v, headers %q, fallback %q",
			got.Concurrency, got.MaxAttempts, got.Stream, got.Headers, got.Fallback)
	}
}

func TestConfigErrors(t *testing.T) {
	in, _ := promptFile(t, 1)
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"unknown field", "pools:\n  p:\n    rmp: 5\n", []string{":3: unknown field rmp"}},
		{"unknown flag", "defaults:\n  concurency: 5\n", []string{`:2: defaults: unknown flag "concurency" (did you mean concurrency?)`}},
		{"bad value", "defaults:\n  rpm: lots\n", []string{":2: defaults: rpm:"}},
		{"list for a single value", "defaults:\n  rpm: [1, 2]\n", []string{":2: defaults: rpm: takes one value"}},
		{"out of range", "defaults:\n  rpm: -5\n", []string{"--rpm must be a rate per minute, not negative"}},
		{"pool limit out of range", "pools:\n  p:\n    rpm: -5\n", []string{":2: pool p: rpm must be a rate per minute, not negative"}},
		{"endpoint limit out of range", "endpoints:\n  x:\n    provider: mock\n    limits: {rpm: -5}\ndefaults:\n  provider: x\n", []string{":2: endpoint x: rpm must be"}},
		{"endpoint concurrency absurd", "endpoints:\n  x:\n    provider: mock\n    limits: {concurrency: 9223372036854775807}\ndefaults:\n  provider: x\n", []string{"concurrency must be from 0 to 100000"}},
		{"repeated key in defaults", "defaults:\n  rpm: 10\n  rpm: 20\n", []string{":3: defaults.rpm is given twice"}},
		{"repeated key in a pool", "pools:\n  p:\n    rpm: 1\n    rpm: 2\n", []string{":4: "}},
		{"endpoint without provider", "endpoints:\n  x:\n    base_url: http://h\ndefaults:\n  provider: x\n", []string{":2: endpoint x: provider is missing"}},
		{"header variable unset", "endpoints:\n  x:\n    provider: openai\n    key_env: K\n    headers: {X-T: \"${NOPE}\"}\ndefaults:\n  provider: x\n", []string{":2: endpoint x: header X-T needs NOPE"}},
		{"key variable unset", "endpoints:\n  x:\n    provider: openai\n    key_env: NOPE_KEY\ndefaults:\n  provider: x\n", []string{"its key variable NOPE_KEY is not set"}},
		{"unknown pool", "endpoints:\n  x:\n    provider: mock\n    pool: nope\ndefaults:\n  provider: x\n", []string{"no pool \"nope\""}},
		{"not yaml", "defaults: [\n", []string{"llmrun.yaml:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "llmrun.yaml")
			os.WriteFile(path, []byte(tc.file), 0o644)
			c := &cli{env: map[string]string{"K": "k"}}
			code := c.run(t, "batch", in, "--config", path, "-q")
			if code != ExitUsage {
				t.Errorf("exit %d, want 2: %s", code, c.stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(c.stderr.String(), w) {
					t.Errorf("stderr does not say %q: %s", w, c.stderr.String())
				}
			}
		})
	}
	c := &cli{}
	if code := c.run(t, "batch", in, "--config", filepath.Join(t.TempDir(), "none.yaml")); code != ExitUsage || !strings.Contains(c.stderr.String(), "no such file") {
		t.Errorf("a missing --config: exit %d: %s", code, c.stderr.String())
	}
}

// TestExampleConfig: the example in examples/ parses and names only real
// flags.
func TestExampleConfig(t *testing.T) {
	cfg, err := loadConfig("../examples/llmrun.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.endpoints) != 3 || len(cfg.pools) != 1 {
		t.Errorf("%d endpoints, %d pools", len(cfg.endpoints), len(cfg.pools))
	}
	c := newBatchCmd(&IO{}, nil)
	c.Flags().AddFlagSet(NewRoot(&IO{}).PersistentFlags())
	if err := cfg.apply(c.Flags(), false); err != nil {
		t.Error(err)
	}
}

// TestK8sIndexedJobExample: the Indexed Job example's llmrun arguments
// are real flags, and it runs as many shards as the Job has indexes.
func TestK8sIndexedJobExample(t *testing.T) {
	b, err := os.ReadFile("../examples/k8s-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	found := false
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				CompletionMode string `yaml:"completionMode"`
				Completions    int    `yaml:"completions"`
				Template       struct {
					Spec struct {
						Containers []struct {
							Name string   `yaml:"name"`
							Args []string `yaml:"args"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if doc.Kind != "Job" {
			continue
		}
		found = true
		if doc.Spec.CompletionMode != "Indexed" {
			t.Errorf("completionMode %q, want Indexed", doc.Spec.CompletionMode)
		}
		args := doc.Spec.Template.Spec.Containers[0].Args
		if len(args) < 2 || args[0] != "batch" {
			t.Fatalf("args %q: want batch INPUT ...", args)
		}
		var o BatchOptions
		cmd := newBatchCmd(&IO{}, func(got *BatchOptions) error { o = *got; return nil })
		cmd.SetArgs(args[1:])
		if err := cmd.Execute(); err != nil {
			t.Fatalf("args %q: %v", args, err)
		}
		if o.Shards != doc.Spec.Completions || o.ShardIndex != "" || o.Redis == "" || o.Priority != -1 {
			t.Errorf("options %+v: want --shards = completions (%d) with the index from JOB_COMPLETION_INDEX, --redis, --priority low", o, doc.Spec.Completions)
		}
	}
	if !found {
		t.Fatal("no Job in the example")
	}
}
