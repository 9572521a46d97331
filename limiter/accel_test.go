package limiter

import (
	"fmt"
	"testing"
	"time"
)

// accelServer is a server with an acceleration limit and a request rate
// (the mock's, see providers/mock/accel.go): fixed windows of 5s from the
// first request admit max(20, 2× the previous window's admissions), and a
// bucket of rate per second holding a second of it.
type accelServer struct {
	rate             float64
	level            float64
	last, start      time.Time
	cur, prev        int
	started, noAccel bool
}

func (s *accelServer) admit(now time.Time) (ok, ramp bool) {
	if !s.started {
		s.started, s.start, s.last, s.level = true, now, now, s.rate
	}
	for !now.Before(s.start.Add(5 * time.Second)) {
		if now.Sub(s.start) < 10*time.Second {
			s.prev, s.cur = s.cur, 0
		} else {
			s.prev, s.cur = 0, 0
		}
		s.start = s.start.Add(now.Sub(s.start) / (5 * time.Second) * 5 * time.Second)
	}
	s.level = min(s.level+s.rate*now.Sub(s.last).Seconds(), s.rate)
	s.last = now
	if !s.noAccel && s.cur >= max(20, 2*s.prev) {
		return false, true
	}
	if s.level < 1 {
		return false, false
	}
	s.level--
	s.cur++
	return true, false
}

// minimumTime is how long n requests take at the least against a fresh
// accelServer: each millisecond, as many as it admits.
func minimumTime(rate float64, n int) time.Duration {
	s := &accelServer{rate: rate}
	done := 0
	for at := time.Duration(0); ; at += time.Millisecond {
		for done < n {
			if ok, _ := s.admit(t0.Add(at)); !ok {
				break
			}
			done++
		}
		if done == n {
			return at
		}
	}
}

// runAccel drives a key with lim against srv: each millisecond it admits
// what the key allows, answered at once; a refusal for acceleration is
// told as such. It returns when n were answered (or after a minute) and
// how many were refused.
func runAccel(t *testing.T, lim Limits, srv *accelServer, n int) (took time.Duration, refused int) {
	t.Helper()
	k := newKeyState("k", lim, t0)
	c := Cost{Requests: 1, Input: 10, Output: 10}
	done := 0
	for at := time.Duration(0); at < time.Minute; at += time.Millisecond {
		now := t0.Add(at)
		for done < n {
			if _, dim := k.reserveAt(now, c); dim != DimNone {
				break
			}
			seq, mask := k.seq, k.charged()
			ok, ramp := srv.admit(now)
			if ok {
				done++
				k.finishAt(now, mask, seq, c, c, true)
				continue
			}
			refused++
			k.refusedAt(now, mask, seq, k.mark, c, Refusal{Ramp: ramp, Dimension: DimRequests, Described: true}, DefaultMaxPause)
			break
		}
		if done == n {
			return at, refused
		}
	}
	t.Fatalf("%d of %d answered in a minute, %d refused", done, n, refused)
	return 0, 0
}

// TestAccelerationLimits: against a server with an acceleration limit,
// 2,000 requests at 6,000 RPM: with the warm-up, nothing is refused and
// the run takes at most 1.15× the least the server allows; without it,
// the refusals hold the rate and few are refused; a warm-up that outgrows
// the key's limit stops governing; and a key without a warm-up starts
// with a full bucket, as before.
func TestAccelerationLimits(t *testing.T) {
	const n = 2000
	least := minimumTime(100, n)
	t.Logf("the server's own minimum: %v", least)
	for _, tt := range []struct {
		name        string
		warmUp      time.Duration
		maxRefused  int
		maxOverLeas float64
	}{
		{"warm-up", time.Minute, 0, 1.15},
		{"no warm-up, refusals hold the rate", 0, 20, 1.4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			took, refused := runAccel(t, Limits{RPM: 6000, Concurrency: 8, WarmUp: tt.warmUp}, &accelServer{rate: 100}, n)
			t.Logf("took %v, %d refused", took, refused)
			if refused > tt.maxRefused {
				t.Errorf("%d refused, want at most %d", refused, tt.maxRefused)
			}
			if r := float64(took) / float64(least); r > tt.maxOverLeas {
				t.Errorf("took %v, %.2f× the server's minimum %v, want at most %.2f×", took, r, least, tt.maxOverLeas)
			}
		})
	}
	t.Run("outgrown", func(t *testing.T) {
		k := newKeyState("k", Limits{RPM: 6000, WarmUp: time.Minute}, t0)
		if s := k.statsAt(t0); k.effective(0) >= 200 || k.effective(0) <= 0 || s.Effective.RPM != 6000 {
			t.Fatalf("warm-up start: %v rpm in force, %v reported; want a few hundred and the limit", k.effective(0), s.Effective.RPM)
		}
		k.statsAt(t0.Add(40 * time.Second))
		if r := k.effective(0); r != 6000 || k.acc.on {
			t.Errorf("40s in: %v rpm, governor on %v; want 6000 and off", r, k.acc.on)
		}
	})
	for _, lim := range []Limits{{RPM: 600}, {RPM: 600, WarmUp: time.Minute}, {RPM: 6000}} {
		t.Run(fmt.Sprintf("a full bucket at %v rpm, warm-up %v", lim.RPM, lim.WarmUp), func(t *testing.T) {
			k := newKeyState("k", lim, t0)
			k.statsAt(t0)
			if k.b[0].level != lim.RPM/60 || k.effective(0) != lim.RPM {
				t.Errorf("level %v, %v rpm: want a full bucket at %v", k.b[0].level, k.effective(0), lim.RPM)
			}
		})
	}
	t.Run("auto: no warm-up under the 429 learner's ramp", func(t *testing.T) {
		// A server that describes nothing: the AIMD's ramp, not a limit,
		// paces the key. A warm-up started on the ramp's rate would hold
		// the ramp under the rate it has to use to double (issue 25's
		// merge: a header-less run paced at a few requests a second).
		k := newKeyState("k", Limits{Auto: true, WarmUp: time.Minute}, t0)
		c := Cost{Requests: 1, Input: 10, Output: 10}
		if _, dim := k.reserveAt(t0, c); dim != DimNone {
			t.Fatalf("the first request waits for %v", dim)
		}
		// Answered in 20ms: the ramp starts at 50 requests a second, over
		// the rate a warm-up would start for.
		now := t0.Add(20 * time.Millisecond)
		k.finishAt(now, k.charged(), k.seq, c, c, true)
		k.answeredAt(now, t0, k.mark, c, c)
		k.statsAt(now)
		if r, least := k.effective(0), 60*warmUpFactor*DefaultAccel.startRate(); k.acc.on || r < least {
			t.Errorf("a header-less ramp: %v rpm in force, warm-up on %v; want the ramp's 3000 and no warm-up", r, k.acc.on)
		}
	})
	t.Run("auto: warm-up from the headers", func(t *testing.T) {
		k := newKeyState("k", Limits{Auto: true, WarmUp: time.Minute}, t0)
		if k.acc.on {
			t.Fatal("a warm-up before any limit is known")
		}
		k.observeAt(t0, Observation{Requests: Window{Limit: 6000, Remaining: 5999}}, t0, nil)
		k.statsAt(t0)
		if r := k.effective(0); r >= 200 || !k.acc.on {
			t.Errorf("after headers naming 6000 rpm: %v rpm in force, governor on %v", r, k.acc.on)
		}
	})
}
