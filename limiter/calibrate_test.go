package limiter

import (
	"testing"
	"time"
)

// TestOne429IsNotABareRegime: the AIMD learns rates only from a server
// that describes nothing; a 429 under limits the user gave, or one that
// carries rate-limit headers, or on a key headers described, cuts no
// rate; and a rate is learned only for the dimension the 429 names (or
// that was binding), so a requests-only gateway gets no token rate.
func TestOne429IsNotABareRegime(t *testing.T) {
	c := Cost{Requests: 1, Input: 100, Output: 10}
	for _, tt := range []struct {
		name     string
		lim      Limits
		headers  bool // the key's answers carried limit headers
		refusal  Refusal
		wantRPM  bool // a request rate learned from 429s
		wantTPM  bool // a token rate learned from 429s
		wantRPMs float64
		drained  int // bucket emptied by the refusal (-1: none)
	}{
		{name: "limits given, 429 with headers", lim: Limits{RPM: 600, ITPM: 60000}, refusal: Refusal{Described: true, Dimension: DimRequests, HasRetryAfter: true, RetryAfter: time.Second}, wantRPMs: 600, drained: -1},
		{name: "limits given, bare 429 naming requests", lim: Limits{RPM: 600, ITPM: 60000}, refusal: Refusal{Dimension: DimRequests}, wantRPMs: 600, drained: 0},
		{name: "limits given, bare 429 naming tokens", lim: Limits{RPM: 600, ITPM: 60000}, refusal: Refusal{Dimension: DimTokens}, wantRPMs: 600, drained: 1},
		{name: "limits given, bare 429 with a hint", lim: Limits{RPM: 600}, refusal: Refusal{Dimension: DimRequests, HasRetryAfter: true, RetryAfter: time.Second}, wantRPMs: 600, drained: -1},
		{name: "auto, headers seen", lim: Limits{Auto: true}, headers: true, refusal: Refusal{Dimension: DimRequests}, wantRPMs: 600, drained: 0},
		{name: "auto, the 429 carries headers", lim: Limits{Auto: true}, refusal: Refusal{Described: true, Dimension: DimRequests}, drained: -1},
		{name: "auto bare, names requests", lim: Limits{Auto: true}, refusal: Refusal{Dimension: DimRequests}, wantRPM: true, drained: -1},
		{name: "auto bare, names tokens", lim: Limits{Auto: true}, refusal: Refusal{Dimension: DimTokens}, wantTPM: true, drained: -1},
		{name: "auto bare, names nothing", lim: Limits{Auto: true}, refusal: Refusal{}, wantRPM: true, drained: -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newKeyState("k", tt.lim, t0)
			now := t0
			for range 10 { // ten answered, 100ms apart
				if _, dim := k.reserveAt(now, c); dim != DimNone {
					t.Fatalf("not admitted at %v: %v", now.Sub(t0), dim)
				}
				seq, mark, at := k.seq, k.mark, k.last
				now = now.Add(100 * time.Millisecond)
				k.finishAt(now, k.charged(), seq, c, c, true)
				k.answeredAt(now, at, mark, c, c)
				if tt.headers {
					k.observeAt(now, Observation{Requests: Window{Limit: 600, Remaining: 500}}, now, nil)
				}
			}
			if _, dim := k.reserveAt(now, c); dim != DimNone {
				t.Fatalf("last not admitted: %v", dim)
			}
			for i := range k.b {
				if k.b[i].on() {
					k.b[i].level = k.b[i].cap
				}
			}
			k.refusedAt(now, k.charged(), k.seq, k.mark, c, tt.refusal, DefaultMaxPause)
			s := k.statsAt(now)
			if got := s.RefusalRPM > 0; got != tt.wantRPM {
				t.Errorf("request rate from 429s %v, want one: %v", s.RefusalRPM, tt.wantRPM)
			}
			if got := s.RefusalTPM > 0; got != tt.wantTPM {
				t.Errorf("token rate from 429s %v, want one: %v", s.RefusalTPM, tt.wantTPM)
			}
			if tt.wantRPMs > 0 && s.Effective.RPM != tt.wantRPMs {
				t.Errorf("effective RPM %v, want %v (no cut)", s.Effective.RPM, tt.wantRPMs)
			}
			for i := range k.b {
				if !k.b[i].on() {
					continue
				}
				if empty := k.b[i].level <= 0; empty != (i == tt.drained) && !tt.wantRPM && !tt.wantTPM {
					t.Errorf("bucket %d level %v: emptied %v, want %v", i, k.b[i].level, empty, i == tt.drained)
				}
			}
		})
	}
}
