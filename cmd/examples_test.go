package cmd

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/llmrun/llmrun/providers/mock"
)

// exampleDir is the repository's examples/, which must run as shipped.
const exampleDir = "../examples"

// TestExamplesRunAsShipped runs every file in examples/ against the mock:
// each JSONL input through batch; the config file with its own settings
// (only its gateway's URL moved to the test's mock); the cron and
// Kubernetes files' llmrun command lines, parsed by llmrun's own flags and,
// where they need nothing but a key and an input, run. A file of another
// kind fails the test, so a new example cannot go untried.
func TestExamplesRunAsShipped(t *testing.T) {
	examples, err := filepath.Abs(exampleDir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(examples)
	if err != nil {
		t.Fatal(err)
	}
	_, url := mockServer(t, mock.Config{})
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(examples, name)
		t.Run(name, func(t *testing.T) {
			switch {
			case strings.HasSuffix(name, ".jsonl"):
				runExampleInput(t, path, url)
			case name == "llmrun.yaml":
				runExampleConfig(t, path, examples, url)
			case strings.HasSuffix(name, ".cron"):
				lines := cronCommands(t, path)
				if len(lines) == 0 {
					t.Fatal("no llmrun command line")
				}
				for _, args := range lines {
					runExampleCommand(t, args, examples, url)
				}
			case strings.HasPrefix(name, "k8s-"):
				lines := k8sCommands(t, path)
				if len(lines) == 0 {
					t.Fatal("no llmrun container")
				}
				for _, args := range lines {
					runExampleCommand(t, args, examples, url)
				}
			default:
				t.Fatalf("an example of a kind this test does not try: %s", name)
			}
		})
	}
}

// runExampleInput runs one JSONL example on the mock, in the dialect its
// lines are written in, and checks every line was answered.
func runExampleInput(t *testing.T, path, url string) {
	dir := t.TempDir()
	provider := "mock"
	if strings.Contains(filepath.Base(path), "anthropic") {
		provider = "mock-anthropic"
	}
	out := filepath.Join(dir, "out.jsonl")
	args := []string{"batch", path, "--provider", provider, "-o", out}
	if strings.HasPrefix(filepath.Base(path), "json-mode") { // every answer must be JSON
		args = append(args, "--require-json")
	}
	c := &cli{}
	if code := c.run(t, args...); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if got, want := len(readLines(t, out)), countLines(t, path); got != want || want == 0 {
		t.Fatalf("%d answers for %d lines", got, want)
	}
	if first := strings.SplitN(c.stderr.String(), "\n", 2)[0]; !strings.Contains(first, path) || !strings.Contains(first, out) || !strings.Contains(first, "requests") {
		t.Errorf("the log's first line does not say what started: %q", first)
	}
}

// runExampleConfig runs the config example with its own defaults (the
// metrics file among them), in a scratch working directory.
func runExampleConfig(t *testing.T, path, examples, url string) {
	dir := t.TempDir()
	t.Chdir(dir)
	in := copyPrompts(t, examples, dir, "prompts.jsonl")
	c := &cli{env: map[string]string{"GATEWAY_API_KEY": "x", "ANTHROPIC_BACKUP_KEY": "x"}}
	if code := c.run(t, "batch", in, "--config", path, "--base-url", url+"/v1", "-o", filepath.Join(dir, "out.jsonl")); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "llmrun.prom")); err != nil {
		t.Errorf("the example's metrics file: %v", err)
	}
}

// copyPrompts copies examples/prompts.jsonl into dir as name.
func copyPrompts(t *testing.T, examples, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examples, "prompts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// cronCommands are the llmrun command lines of a crontab: each from
// "llmrun " to the closing quote or redirection.
func cronCommands(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		_, cmd, ok := strings.Cut(line, " llmrun ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "'")
		cmd, _, _ = strings.Cut(cmd, ">>")
		out = append(out, strings.Fields(cmd))
	}
	return out
}

// k8sCommands are the args of every container running the llmrun image.
func k8sCommands(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: %v", path, err)
		}
		walkContainers(doc, func(c map[string]any) {
			if img, _ := c["image"].(string); strings.Contains(img, "/llmrun:") {
				var args []string
				for _, a := range c["args"].([]any) {
					args = append(args, a.(string))
				}
				out = append(out, args)
			}
		})
	}
	return out
}

func walkContainers(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		if cs, ok := v["containers"].([]any); ok {
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					f(m)
				}
			}
		}
		for _, x := range v {
			walkContainers(x, f)
		}
	case []any:
		for _, x := range v {
			walkContainers(x, f)
		}
	}
}

// runExampleCommand checks args with llmrun's own flags and, unless they
// need a Redis, runs them on the mock in a scratch directory standing for
// the cron job's directory or the pod's /data volume, with the input
// being examples/prompts.jsonl.
func runExampleCommand(t *testing.T, args []string, examples, url string) {
	t.Helper()
	root, _ := newRoot(&IO{Err: &strings.Builder{}, Out: &strings.Builder{}})
	sub, rest, err := root.Find(args)
	if err != nil || sub == root {
		t.Fatalf("%q: no such command: %v", args, err)
	}
	if err := sub.ParseFlags(rest); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if sub.Name() != "batch" || sub.Flags().Changed("redis") {
		return // parsed; a Redis is not the mock's to stand for
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "/data/", dir+"/")
	}
	copyPrompts(t, examples, dir, filepath.Base(sub.Flags().Arg(0)))
	c := &cli{env: map[string]string{"OPENAI_API_KEY": "x", "OPENAI_BASE_URL": url + "/v1", "JOB_COMPLETION_INDEX": "0"}}
	if code := c.run(t, append(args, "--poll-interval", "10ms")...); code != ExitOK {
		t.Fatalf("%q: exit %d: %s", args, code, c.stderr.String())
	}
}
