package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// outputOrder lists an output's custom_ids in the order they were written.
func outputOrder(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		ids = append(ids, gjson.GetBytes(sc.Bytes(), "custom_id").Str)
	}
	return ids
}

// TestLinePriorityOrdersAdmissions: with one request at a time and a
// budget that admits one per 100ms, the requests waiting together are sent
// by their lines' priority (the run's --priority for lines without one).
// Within a priority they go first come first served, which among workers
// started together is not line order, so only priorities are compared.
func TestLinePriorityOrdersAdmissions(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	// One request goes alone (the key's first answer calibrates the
	// estimate); the nine others queue together.
	prios := []any{nil, "low", 3, nil, "high", 3, -2, nil, "high", "low"}
	value := map[any]int{nil: 0, "low": -1, "high": 1, 3: 3, -2: -2}
	var b strings.Builder
	for i, p := range prios {
		m := map[string]any{"custom_id": fmt.Sprintf("r%d", i), "prompt": fmt.Sprintf("question %d", i), "max_tokens": 8}
		if p != nil {
			m["priority"] = p
		}
		line, _ := json.Marshal(m)
		b.Write(line)
		b.WriteByte('\n')
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	c := &cli{env: mockEnv(url)}
	out := filepath.Join(dir, "out.jsonl")
	if code := c.run(t, "batch", in, "-o", out, "--provider", "openai", "--model", "m", "--quiet", "--concurrency", "1",
		"--rpm", "600", "--burst", "100ms", "--priority", "normal", "--priority-aging", "0"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	var got []int
	for _, id := range outputOrder(t, out) {
		var i int
		fmt.Sscanf(id, "r%d", &i)
		got = append(got, value[prios[i]])
	}
	if len(got) != len(prios) || !slices.IsSortedFunc(got[1:], func(a, b int) int { return b - a }) {
		t.Fatalf("answered with priorities %v, want the first then highest first", got)
	}
}

func TestPriorityFlag(t *testing.T) {
	var got BatchOptions
	for arg, want := range map[string]int{"high": 1, "low": -1, "normal": 0, "-7": -7} {
		cmd := newBatchCmd(&IO{}, func(o *BatchOptions) error { got = *o; return nil })
		cmd.SetArgs([]string{"in.jsonl", "--priority", arg})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("--priority %s: %v", arg, err)
		}
		if got.Priority != want {
			t.Errorf("--priority %s: %d, want %d", arg, got.Priority, want)
		}
	}
	c := &cli{}
	if code := c.run(t, "batch", "in.jsonl", "--priority", "urgent"); code != ExitUsage || !strings.Contains(c.stderr.String(), "priority") {
		t.Errorf("--priority urgent: exit %d: %s", code, c.stderr.String())
	}
}
