package job

import (
	"strings"
	"testing"
	"time"
)

func TestChooseMode(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		o           OfflineOptions
		pending     int
		open        int
		want, why   string
		wantNoNotes bool
	}{
		"sync is sync":                  {o: OfflineOptions{Mode: ModeSync}, pending: 5000, want: ModeSync, wantNoNotes: true},
		"batch is batch":                {o: OfflineOptions{Mode: ModeBatch}, pending: 1, want: ModeBatch, wantNoNotes: true},
		"auto: open batches first":      {o: OfflineOptions{Mode: ModeAuto, Threshold: 1000}, pending: 1, open: 2, want: ModeBatch, why: "2 batch(es)"},
		"auto: below the threshold":     {o: OfflineOptions{Mode: ModeAuto, Threshold: 1000}, pending: 999, want: ModeSync, why: "< --batch-threshold"},
		"auto: no deadline":             {o: OfflineOptions{Mode: ModeAuto, Threshold: 1000}, pending: 1000, want: ModeBatch, why: "no --deadline"},
		"auto: deadline too soon":       {o: OfflineOptions{Mode: ModeAuto, Threshold: 10, Deadline: Deadline{After: 23 * time.Hour}}, pending: 50, want: ModeSync, why: "sooner than"},
		"auto: deadline at a time":      {o: OfflineOptions{Mode: ModeAuto, Threshold: 10, Deadline: Deadline{At: now.Add(36 * time.Hour)}}, pending: 50, want: ModeBatch, why: "36h0m0s away"},
		"auto: a time already too near": {o: OfflineOptions{Mode: ModeAuto, Threshold: 10, Deadline: Deadline{At: now.Add(time.Hour)}}, pending: 50, want: ModeSync, why: "1h0m0s away"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, why := chooseMode(&tt.o, tt.pending, tt.open, now)
			if got != tt.want || (tt.wantNoNotes && why != "") || !strings.Contains(why, tt.why) {
				t.Errorf("chooseMode = %s (%q), want %s (%q)", got, why, tt.want, tt.why)
			}
		})
	}
}

func TestParseModeAndDeadline(t *testing.T) {
	if _, err := ParseMode("fast"); err == nil {
		t.Error("ParseMode accepted fast")
	}
	if m, err := ParseMode(ModeAuto); err != nil || m != ModeAuto {
		t.Errorf("ParseMode(auto) = %q, %v", m, err)
	}
	if d, err := ParseDeadline("36h"); err != nil || d.After != 36*time.Hour {
		t.Errorf("ParseDeadline(36h) = %+v, %v", d, err)
	}
	if d, err := ParseDeadline("2026-03-02T12:00:00Z"); err != nil || d.At.IsZero() {
		t.Errorf("ParseDeadline(time) = %+v, %v", d, err)
	}
	for _, bad := range []string{"-1h", "tomorrow", ""} {
		if _, err := ParseDeadline(bad); err == nil {
			t.Errorf("ParseDeadline(%q) accepted", bad)
		}
	}
}
