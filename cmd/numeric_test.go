package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestNumericFlagsNeverPanic (issue 22 item 8) gives every numeric flag of
// batch the values that break code (zero, negative, huge, fractional, NaN,
// infinite): each run ends with an exit code, never a panic
// (--concurrency 9223372036854775807 made a channel of that size).
func TestNumericFlagsNeverPanic(t *testing.T) {
	if testing.Short() {
		t.Skip("a run per value")
	}
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, _ := promptFile(t, 2)
	values := map[string][]string{
		"int":      {"0", "-1", "9223372036854775807", "-9223372036854775808"},
		"int64":    {"0", "-1", "9223372036854775807", "-9223372036854775808"},
		"uint64":   {"0", "18446744073709551615"},
		"float64":  {"0", "-1", "0.5", "1e308", "NaN", "+Inf", "-Inf"},
		"duration": {"0s", "-1s", "1ns", "2562047h47m16s"},
	}
	var flags []*pflag.Flag
	newBatchCmd(&IO{}, func(*BatchOptions) error { return nil }).Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := values[f.Value.Type()]; ok {
			flags = append(flags, f)
		}
	})
	if len(flags) < 20 {
		t.Fatalf("found only %d numeric flags", len(flags))
	}
	c := &cli{env: map[string]string{"OPENAI_API_KEY": "sk-test-numeric-000000"}}
	for _, f := range flags {
		for _, v := range values[f.Value.Type()] {
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := []string{"batch", in, "--provider", "openai", "--model", "m", "--base-url", url + "/v1", "-o", out, "--quiet", "--" + f.Name + "=" + v}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			code := execute(ctx, t, c, args)
			cancel()
			if code < 0 {
				t.Errorf("--%s=%s: exit %d: %s", f.Name, v, code, c.stderr.String())
			}
		}
	}
}

// execute is cli.run with a context, turning a panic into a failure.
func execute(ctx context.Context, t *testing.T, c *cli, args []string) (code int) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			c.stderr.WriteString(fmt.Sprintf("panic: %v", r))
			code = -1
		}
	}()
	c.stderr.Reset()
	c.stdout.Reset()
	io := &IO{In: strings.NewReader(""), Out: &c.stdout, Err: &c.stderr, Getenv: func(k string) string { return c.env[k] }}
	return Execute(ctx, io, args)
}

// TestFractionalRPMRuns: --rpm 0.5 sends (the first request at once, the
// next two minutes later) where it failed every request as "too large".
func TestFractionalRPMRuns(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, _ := promptFile(t, 1)
	c := &cli{env: map[string]string{"OPENAI_API_KEY": "sk-test-numeric-000000"}}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--base-url", url+"/v1", "--rpm", "0.5", "--quiet"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--base-url", url+"/v1", "--concurrency", "9223372036854775807"); code != ExitUsage || !strings.Contains(c.stderr.String(), "--concurrency must be from 1 to 100000") {
		t.Fatalf("absurd concurrency: exit %d: %s", code, c.stderr.String())
	}
}
