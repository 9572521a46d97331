package report

import (
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/pricing"
)

// randomSnapshot is a run under way with figures of any length.
func randomSnapshot(rng *rand.Rand) snapshot {
	s := snapshot{
		total: 1 + rng.Int64N(1<<40), rateLimited: rng.Int64N(1 << 20),
		tokensIn: rng.Int64N(1 << 45), tokensOut: rng.Int64N(1 << 40), spent: pricing.FromUSD(rng.Float64() * 1e5),
	}
	s.done = rng.Int64N(s.total + 1)
	s.failed = rng.Int64N(s.done + 1)
	s.skipped = rng.Int64N(s.done - s.failed + 1)
	s.succeeded = s.done - s.failed - s.skipped
	s.pending = s.total - s.done
	if rng.IntN(2) == 0 {
		s.spendWaiting = rng.Int64N(1 << 20)
	}
	if rng.IntN(2) == 0 {
		s.dayWaiting = rng.Int64N(1 << 20)
		if rng.IntN(2) == 0 {
			s.dayReset, s.dayResetIn = time.Unix(rng.Int64N(1<<40), 0), time.Duration(rng.Int64N(int64(30*time.Hour)))
		}
	}
	if rng.IntN(2) == 0 {
		s.status = strings.Repeat("provider down (no such host api.example.invalid), holding, ", 1+rng.IntN(3))
	}
	return s
}

// TestFitStatusEveryWidth: at every width the status fits, its parts keep
// their display order, and a part is shown only if every more important
// part is (the priority order is stable).
func TestFitStatusEveryWidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	snaps := []snapshot{typical, {total: 3}, {total: 3, failed: 1, done: 1}, {total: 9, failed: 2, done: 2, status: "上游服务器错误 (连接被拒绝), holding"}}
	for range 200 {
		snaps = append(snaps, randomSnapshot(rng))
	}
	for _, s := range snaps {
		segs := s.segments()
		for room := -1; room <= 240; room++ {
			got := fitStatus(segs, room)
			if columns(got) > max(room, 0) {
				t.Fatalf("room %d: %d columns: %q", room, columns(got), got)
			}
			shown := -1 // the display index of the last part found
			lowest := 100
			for i, seg := range segs {
				if !partShown(got, seg) {
					continue
				}
				if i < shown {
					t.Fatalf("room %d: %q out of order in %q", room, seg.full, got)
				}
				shown = i
				lowest = min(lowest, seg.rank)
			}
			for _, seg := range segs {
				if seg.rank > lowest && !partShown(got, seg) {
					t.Fatalf("room %d: %q (rank %d) dropped while rank %d shown: %q", room, seg.full, seg.rank, lowest, got)
				}
			}
		}
	}
	// With room for everything, everything at full length.
	if got := fitStatus(typical.segments(), 400); !strings.Contains(got, "61.2M in / 17.7M out tokens") || !strings.Contains(got, "321 429s") || !strings.Contains(got, "$123.46 spent") {
		t.Errorf("room 400: %q", got)
	}
}

// partShown reports whether seg is in the status, whole or, as its last
// part, cut short.
func partShown(status string, seg segment) bool {
	if strings.Contains(status, seg.full) || strings.Contains(status, seg.short) {
		return true
	}
	if !strings.HasSuffix(status, "…") {
		return false
	}
	parts := strings.Split(strings.TrimSuffix(status, "…"), partSep)
	tail := parts[len(parts)-1]
	return tail != "" && (strings.HasPrefix(seg.full, tail) || strings.HasPrefix(seg.short, tail))
}

// barCellsOf is the width of the bar in a frame: from its "[" to its "]".
func barCellsOf(frame string) int {
	i, j := strings.IndexByte(frame, '['), strings.IndexByte(frame, ']')
	if i < 0 || j < i {
		return -1
	}
	return j - i + 1
}

// TestTTYBarFrames drives the bar as a 1,500-request run does, on a fake
// clock, at many widths: every frame fits, the bar keeps its width, the
// rate is in every frame after the first second (from 70 columns), and at
// 200 columns every figure is shown.
func TestTTYBarFrames(t *testing.T) {
	for _, width := range []int{40, 60, 70, 79, 80, 81, 100, 120, 160, 200, 300} {
		synctest.Test(t, func(t *testing.T) {
			b := newTTYBar(nil, width, 1500)
			s := snapshot{total: 1500, status: "waiting for RPM"}
			cells := -1
			for i := range 100 {
				time.Sleep(200 * time.Millisecond)
				s.succeeded += 14
				if i%10 == 3 {
					s.failed++
				}
				s.rateLimited += int64(i % 2)
				s.tokensIn, s.tokensOut, s.spent = 13*s.succeeded, 40*s.succeeded, pricing.FromUSD(2e-5*float64(s.succeeded))
				if i > 50 {
					s.status = "provider down (connection refused by 127.0.0.1:9), holding"
				}
				f := b.frame(s)
				if columns(f) > width-barMargin {
					t.Fatalf("width %d: frame of %d columns: %q", width, columns(f), f)
				}
				if width < 70 {
					continue
				}
				if c := barCellsOf(f); cells < 0 {
					cells = c
				} else if c != cells {
					t.Fatalf("width %d: bar of %d cells after %d: %q", width, c, cells, f)
				}
				if i >= 5 && !strings.Contains(f, " req/") {
					t.Fatalf("width %d, %v in: no rate in %q", width, time.Duration(i+1)*200*time.Millisecond, f)
				}
				if width >= 200 && i > 10 {
					for _, want := range []string{"req/s", "failed", "spent", " tok", "429", "["} {
						if !strings.Contains(f, want) {
							t.Fatalf("width %d: %q lacks %q", width, f, want)
						}
					}
				}
			}
		})
	}
}
