package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/limiter"
)

// savedDays reads the daily counts the state file of dir's output holds
// on disk now, and the file's identity (a rewrite renames a new file in).
func savedDays(t *testing.T, dir string) ([]limiter.DayUsage, os.FileInfo) {
	t.Helper()
	out := filepath.Join(dir, "out.jsonl")
	st, err := checkpoint.Status(out)
	if err != nil {
		t.Fatal(err)
	}
	var us []limiter.DayUsage
	if raw, ok := st.State[dayStateKey]; ok {
		if err := json.Unmarshal(raw, &us); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(checkpoint.StatePath(out))
	if err != nil {
		t.Fatal(err)
	}
	return us, fi
}

// TestDailyCountsAreTheLastStateWrite: when Run returns, the daily counts
// are on disk (a kill before Close keeps them), saved after the run's last
// line, so Close does not write the state file again; a rerun with
// nothing to send leaves the file as its Open wrote it (the counts are
// unchanged).
func TestDailyCountsAreTheLastStateWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		days := func() *limiter.Days { return limiter.NewDays(limiter.DaysOptions{Now: time.Now}) }
		p := &slowProvider{latency: 10 * time.Millisecond}
		cfg, store := testRun(t, dir, 12, p, func(c *Config) { c.Days = days() })
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		us, before := savedDays(t, dir)
		if len(us) != 1 || us[0].Requests != 12 {
			t.Fatalf("daily counts on disk when Run returns: %+v, want 12 requests", us)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		if _, after := savedDays(t, dir); !os.SameFile(before, after) {
			t.Fatal("Close wrote the state file again after the daily counts were saved")
		}

		cfg.Store, cfg.Days = reopen(t, dir), days()
		_, opened := savedDays(t, dir)
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Store.Close(); err != nil {
			t.Fatal(err)
		}
		us, after := savedDays(t, dir)
		if !os.SameFile(opened, after) {
			t.Fatal("a rerun with nothing to send wrote the state file after Open")
		}
		if p.sent.Load() != 12 || len(us) != 1 || us[0].Requests != 12 {
			t.Fatalf("the rerun: sent %d in all, daily counts %+v, want 12", p.sent.Load(), us)
		}
	})
}
