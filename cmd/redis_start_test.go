package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/limiter/redisbudget/redistest"
	"github.com/llmrun/llmrun/providers/mock"
)

// TestRedisStartExitCodes is issue 22 item 12: at start, a Redis that
// refuses the credentials is a usage error (exit 2) that never shows the
// password, one that cannot be reached aborts (exit 3), as the README's
// table says; status --redis under --log-format json prints only JSON
// lines (no raw go-redis log lines).
func TestRedisStartExitCodes(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, _ := promptFile(t, 2)
	args := func(redis string) []string {
		return []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet", "--rpm", "60", "--redis", redis}
	}
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, args("redis://127.0.0.1:1")...); code != ExitAborted {
		t.Errorf("unreachable Redis: exit %d, want %d: %s", code, ExitAborted, c.stderr.String())
	}
	c = &cli{env: mockEnv(url)}
	c.run(t, "status", "--redis", "redis://127.0.0.1:1", "--log-format", "json")
	for _, line := range strings.Split(strings.TrimSpace(c.stderr.String()), "\n") {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("status --redis --log-format json printed a line that is not JSON: %q", line)
		}
	}

	addr, stop, err := redistest.Start("--requirepass", "right-pass-123")
	if err != nil {
		if redistest.Required() {
			t.Fatal(err)
		}
		t.Skipf("no redis-server: %v", err)
	}
	defer stop()
	c = &cli{env: mockEnv(url)}
	if code := c.run(t, args("redis://:wrong-pass-456@"+addr)...); code != ExitUsage || strings.Contains(c.stderr.String(), "wrong-pass-456") {
		t.Errorf("wrong Redis password: exit %d, want %d, without the password: %s", code, ExitUsage, c.stderr.String())
	}
}
