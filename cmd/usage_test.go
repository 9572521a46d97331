package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestUsageErrorsSendNothing: every bad invocation exits 2 with a message
// naming what is wrong, in plain words, and the server sees no request.
func TestUsageErrorsSendNothing(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 1})
	in, _ := promptFile(t, 3)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	readOnly := filepath.Join(dir, "ro.json")
	if err := os.WriteFile(readOnly, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	base := []string{"batch", in, "-o", out, "--provider", "openai", "--model", "m", "-q"}
	cases := []struct {
		name string
		args []string
		want []string // substrings of stderr
		not  []string
	}{
		{"no argument", []string{"batch"}, []string{"accepts 1 arg(s), received 0", "usage: llmrun batch INPUT.jsonl"}, nil},
		{"two arguments", []string{"batch", in, in}, []string{"received 2"}, nil},
		{"misspelt command", []string{"bacth", in}, []string{`unknown command "bacth"`, "batch"}, nil},
		{"misspelt flag", append(base, "--concurency", "3"), []string{"--concurency", "did you mean --concurrency?"}, nil},
		{"misspelt flag prefix", append(base, "--max-attempt", "3"), []string{"did you mean --max-attempts?"}, nil},
		{"negative rpm", append(base, "--rpm", "-5"), []string{"--rpm must be a rate per minute, not negative", "got -5"}, nil},
		{"negative max tokens", append(base, "--max-tokens", "-5"), []string{"--max-tokens must not be negative"}, nil},
		{"zero concurrency", append(base, "--concurrency", "0"), []string{"--concurrency must be from 1 to 100000, got 0"}, nil},
		{"headroom above 1", append(base, "--headroom", "1.5"), []string{"--headroom must be in (0, 1]"}, nil},
		{"backoff max below base", append(base, "--backoff-base", "2s", "--backoff-max", "1s"), []string{"--backoff-max must be at least --backoff-base"}, nil},
		{"bad fsync", append(base, "--fsync", "xx"), []string{`--fsync: unknown fsync mode "xx"`}, []string{"checkpoint:"}},
		{"fallback without provider", append(base, "--fallback", "gpt-4o"), []string{`--fallback "gpt-4o": want provider:model`, "openai:gpt-4o-mini"}, nil},
		{"summary in a missing directory", append(base, "--summary", "/nonexistent/s.json"), []string{"--summary /nonexistent/s.json: directory /nonexistent does not exist"}, nil},
		{"summary read-only", append(base, "--summary", readOnly), []string{"--summary " + readOnly + ": permission denied"}, nil},
		{"errors file is a directory", append(base, "--errors", dir), []string{"--errors: " + dir + " is a directory"}, nil},
		{"missing schema", append(base, "--json-schema", "/nope.json"), []string{"--json-schema /nope.json: no such file or directory"}, []string{"retry:", "open /nope.json"}},
		{"missing input", []string{"batch", filepath.Join(dir, "nope.jsonl"), "--provider", "openai"}, []string{"nope.jsonl: no such file or directory"}, []string{"open " + dir}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "summary read-only" && os.Geteuid() == 0 {
				t.Skip("root writes read-only files")
			}
			before := m.Stats().Attempts
			c := &cli{env: mockEnv(url)}
			code := c.run(t, tc.args...)
			stderr := c.stderr.String()
			if code != ExitUsage {
				t.Errorf("exit %d, want %d: %s", code, ExitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(stderr, n) {
					t.Errorf("stderr %q says %q", stderr, n)
				}
			}
			if n := m.Stats().Attempts - before; n != 0 {
				t.Errorf("%d requests reached the server", n)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a usage error created the output %s", out)
	}
}

func TestPlainMessage(t *testing.T) {
	pathErr := &os.PathError{Op: "open", Path: "nope.jsonl", Err: errors.New("no such file or directory")}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("checkpoint: unknown fsync mode"), "unknown fsync mode"},
		{fmt.Errorf("--fsync: %w", errors.New("checkpoint: unknown fsync mode")), "--fsync: unknown fsync mode"},
		{errors.New("retry: json schema x: limiter: y"), "json schema x: y"},
		{fmt.Errorf("nope.jsonl: %w", pathErr), "nope.jsonl: no such file or directory"},
		{pathErr, "open nope.jsonl: no such file or directory"},
		{errors.New("anthropic: model not found"), "anthropic: model not found"},
	} {
		if got := plainMessage(tc.err); got != tc.want {
			t.Errorf("plainMessage(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"concurency", "concurrency", 1}, {"kitten", "sitting", 3}, {"rpm", "tpm", 1}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}
