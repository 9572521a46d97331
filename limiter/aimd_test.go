package limiter

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// simServer is a strict provider without rate-limit headers: a token
// bucket of one second's refill per dimension that refuses (429, no hint)
// what it cannot cover, charging nothing for a refusal.
type simServer struct {
	reqRate, tokRate float64 // per second; 0 = unlimited
	req, tok         float64 // levels
	last             time.Time
	// mute: a refusal names no dimension (its message says nothing).
	mute bool
}

// admit admits c at now, or returns false and the dimension its 429
// names (DimNone when mute).
func (s *simServer) admit(now time.Time, c Cost) (bool, Dimension) {
	dt := now.Sub(s.last).Seconds()
	s.last = now
	s.req = min(s.req+s.reqRate*dt, s.reqRate)
	s.tok = min(s.tok+s.tokRate*dt, s.tokRate)
	t := float64(c.Input + c.Output)
	named := DimNone
	switch {
	case s.reqRate > 0 && s.req < 1:
		named = DimRequests
	case s.tokRate > 0 && s.tok < t:
		named = DimTokens
	default:
		s.req--
		s.tok -= t
		return true, DimNone
	}
	if s.mute {
		named = DimNone
	}
	return false, named
}

// simTrace is what a simulated run saw.
type simTrace struct {
	accepted, refused int
	rates             []float64 // request rate in force, per millisecond
	cuts              []time.Duration
}

// simulateAIMD drives an AIMD against srv for d: a backlogged client that
// sends one request of cost c whenever its own bucket (the AIMD's rates,
// one second of burst, drained on a cut) and any pause allow; answers are
// instant. change, if set, is called every millisecond (to move the
// server's limits).
func simulateAIMD(a *AIMD, srv *simServer, c Cost, d time.Duration, change func(at time.Duration, srv *simServer)) simTrace {
	var tr simTrace
	now := t0
	srv.last = now
	srv.req, srv.tok = srv.reqRate, srv.tokRate
	var lvReq, lvTok float64 = 1, aimdAmount(c, aimdTokens)
	var paused time.Time
	a.Ramp(now, 0)
	for at := time.Duration(0); at < d; at += time.Millisecond {
		now = t0.Add(at)
		if change != nil {
			change(at, srv)
		}
		rr, rt := a.Rates(now)
		tr.rates = append(tr.rates, rr)
		if rr > 0 {
			lvReq = min(lvReq+rr/1000, max(rr, 1))
		}
		if rt > 0 {
			lvTok = min(lvTok+rt/1000, max(rt, aimdAmount(c, aimdTokens)))
		}
		for now.After(paused) || now.Equal(paused) {
			if (rr > 0 && lvReq < 1) || (rt > 0 && lvTok < aimdAmount(c, aimdTokens)) {
				break
			}
			lvReq--
			lvTok -= aimdAmount(c, aimdTokens)
			ep := a.Sent(now, c)
			ok, named := srv.admit(now, c)
			if ok {
				tr.accepted++
				a.Answered(ep, c, c)
				continue
			}
			tr.refused++
			re := a.RateLimitedOn(now, ep, c, false, named)
			if !re.Echo {
				tr.cuts = append(tr.cuts, at)
				paused = now.Add(re.Pause)
				lvReq, lvTok = 0, 0
			}
			break
		}
	}
	return tr
}

// TestAIMD is the controller's table test with explicit time, against a
// simulated strict server without headers or hints.
func TestAIMD(t *testing.T) {
	c := Cost{Requests: 1, Input: 120, Output: 15}
	for _, tt := range []struct {
		name  string
		srv   simServer
		d     time.Duration
		moves func(at time.Duration, srv *simServer)
		check func(t *testing.T, tr simTrace, a *AIMD)
	}{
		{
			// The ramp finds the server's rate with few 429s: the first
			// cut (measured over the ramp, less the server's initial
			// burst) brings the rate from what drew the 429 to just
			// under the server's rate.
			name: "cut",
			srv:  simServer{reqRate: 10},
			d:    10 * time.Second,
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				if len(tr.cuts) < 1 {
					t.Fatal("no cut")
				}
				at := func(d time.Duration) float64 { return tr.rates[d/time.Millisecond] }
				before, after := at(tr.cuts[0]-time.Millisecond), at(tr.cuts[0]+time.Millisecond)
				if after > before/2 || after < 8 || after > 10.5 {
					t.Errorf("first cut: %v → %v, want to about 10", before, after)
				}
				if tr.refused > 3 {
					t.Errorf("%d 429s in the first 10s, want at most 3", tr.refused)
				}
			},
		},
		{
			// After a cut the rate stays put for Hold, then grows by the
			// same increment per Step (additive) while under the peak.
			name: "hold then additive probe",
			srv:  simServer{reqRate: 10},
			d:    30 * time.Second,
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				// A cut followed by a quiet Hold and two Steps.
				var cut time.Duration = -1
				for i, c := range tr.cuts {
					if i > 0 && (i+1 == len(tr.cuts) || tr.cuts[i+1]-c > DefaultAIMD.Hold+3*DefaultAIMD.Step) {
						cut = c
						break
					}
				}
				if cut < 0 {
					t.Fatalf("no quiet cut among %v", tr.cuts)
				}
				ms := func(d time.Duration) float64 { return tr.rates[(cut+d)/time.Millisecond] }
				r0 := ms(time.Millisecond)
				if r := ms(DefaultAIMD.Hold - time.Millisecond); r != r0 {
					t.Errorf("rate moved during Hold: %v → %v", r0, r)
				}
				step := DefaultAIMD.Step
				d1 := ms(DefaultAIMD.Hold+step+time.Millisecond) - ms(DefaultAIMD.Hold+time.Millisecond)
				d2 := ms(DefaultAIMD.Hold+2*step+time.Millisecond) - ms(DefaultAIMD.Hold+step+time.Millisecond)
				if d1 <= 0 || math.Abs(d1-d2) > 1e-9 || d1 > 0.1 {
					t.Errorf("increments after Hold: %v then %v, want equal small steps", d1, d2)
				}
			},
		},
		{
			// Steady state: few 429s, most of the server's rate used.
			name: "steady",
			srv:  simServer{reqRate: 10},
			d:    60 * time.Second,
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				if tr.refused > 12 {
					t.Errorf("%d 429s in 60s, want at most 12", tr.refused)
				}
				if tr.accepted < int(0.9*10*60) {
					t.Errorf("%d accepted in 60s, want at least 90%% of 600", tr.accepted)
				}
			},
		},
		{
			// Tokens bind: the token rate is learned as well.
			name: "tokens",
			srv:  simServer{tokRate: 1000}, // 1000/135 = 7.4 requests/s
			d:    30 * time.Second,
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				if _, tok := a.Peak(); tok < 850 || tok > 1150 {
					t.Errorf("measured token rate = %v, want about 1000", tok)
				}
				if float64(tr.accepted) < 0.88*1000*30/135 || tr.refused > 8 {
					t.Errorf("%d accepted, %d 429s; want ≥ 88%% of %d and at most 8", tr.accepted, tr.refused, 1000*30/135)
				}
			},
		},
		{
			// A gateway that limits requests only: no token rate is
			// ever invented, whether its 429s say "requests" or nothing.
			name: "requests only, named",
			srv:  simServer{reqRate: 10},
			d:    30 * time.Second,
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				if _, tok := a.Rates(t0.Add(30 * time.Second)); tok != 0 {
					t.Errorf("token rate %v for a requests-only server, want none", tok)
				}
				if _, tok := a.Peak(); tok != 0 {
					t.Errorf("token peak %v, want none", tok)
				}
			},
		},
		{
			name: "requests only, 429s name nothing",
			srv:  simServer{reqRate: 10, mute: true},
			d:    30 * time.Second,
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				if _, tok := a.Rates(t0.Add(30 * time.Second)); tok != 0 {
					t.Errorf("token rate %v for a requests-only server, want none", tok)
				}
				if req, _ := a.Peak(); req < 8.5 || req > 11.5 {
					t.Errorf("measured request rate %v, want about 10", req)
				}
			},
		},
		{
			// The server's limit doubles at 30s: the probe finds it.
			name: "recovery after the limit rises",
			srv:  simServer{reqRate: 10},
			d:    50 * time.Second,
			moves: func(at time.Duration, srv *simServer) {
				if at == 30*time.Second {
					srv.reqRate = 20
				}
			},
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				if r := tr.rates[len(tr.rates)-1]; r < 17 {
					t.Errorf("rate 20s after the limit doubled = %v, want at least 17", r)
				}
			},
		},
		{
			// A server that lowers its limit: the next 429 measures it.
			name: "limit falls",
			srv:  simServer{reqRate: 20},
			d:    30 * time.Second,
			moves: func(at time.Duration, srv *simServer) {
				if at == 15*time.Second {
					srv.reqRate = 5
				}
			},
			check: func(t *testing.T, tr simTrace, a *AIMD) {
				if r := tr.rates[len(tr.rates)-1]; r < 4 || r > 5.6 {
					t.Errorf("rate 15s after the limit fell to 5 = %v", r)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAIMD(AIMDConfig{})
			srv := tt.srv
			tr := simulateAIMD(a, &srv, c, tt.d, tt.moves)
			t.Logf("accepted %d, 429s %d, cuts at %v, final rate %.2f", tr.accepted, tr.refused, tr.cuts, tr.rates[len(tr.rates)-1])
			tt.check(t, tr, a)
		})
	}
}

// TestAIMDFirstMeasurement: the first measurement began with the server's
// bucket full, so it discounts Burst's worth of refill.
func TestAIMDFirstMeasurement(t *testing.T) {
	a := NewAIMD(AIMDConfig{Margin: 0.1})
	req := Cost{Requests: 1}
	for i := range 20 { // 20 accepted over 1s: 10/s and a burst of 10
		a.Answered(a.Sent(t0.Add(time.Duration(i)*50*time.Millisecond), req), req, req)
	}
	a.RateLimited(t0.Add(time.Second), a.Sent(t0.Add(time.Second), req), req, false)
	if got, want := a.rate[aimdRequests], 0.9*20.5/2; math.Abs(got-want) > 1e-9 {
		t.Fatalf("rate after the first 429 = %v, want %v (20.5 over 1s + 1s of burst, less 10%%)", got, want)
	}
}

// TestAIMDSteps checks the controller's arithmetic step by step, with
// explicit instants (no ramp, Step 1s, Hold 2s, Probe 0.1, Margin 0.1, no
// initial burst).
func TestAIMDSteps(t *testing.T) {
	a := NewAIMD(AIMDConfig{Step: time.Second, Hold: 2 * time.Second, Probe: 0.1, Margin: 0.1, Burst: time.Nanosecond})
	req := Cost{Requests: 1}
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// send sends n requests evenly over [from, from+1s), all answered.
	send := func(from float64, n int) {
		for i := range n {
			a.Answered(a.Sent(sec(from+float64(i)/float64(n)), req), req, req)
		}
	}
	wantRate := func(at float64, want float64) {
		t.Helper()
		if got, _ := a.Rates(sec(at)); math.Abs(got-want) > 1e-6 {
			t.Fatalf("rate at %vs = %v, want %v", at, got, want)
		}
	}
	wantRate(0, 0) // no limit before any 429

	// Cut: 10 accepted over the second before a 429 measure
	// 10×10.5/10 = 10.5/s; the rate is set 10% under it.
	send(0, 10)
	ep := a.Sent(sec(1), req)
	re := a.RateLimited(sec(1), ep, req, false)
	if re.Echo || !re.Drain || re.Pause != DefaultAIMD.BackoffBase {
		t.Fatalf("reaction = %+v, want a cut, drain, pause %v", re, DefaultAIMD.BackoffBase)
	}
	wantRate(1, 9.45)
	if p, _ := a.Peak(); math.Abs(p-10.5) > 1e-6 {
		t.Fatalf("peak = %v, want 10.5", p)
	}
	// An attempt sent before the cut is an echo: nothing changes.
	if re := a.RateLimited(sec(1.1), ep, req, false); !re.Echo || re.Pause != 0 {
		t.Fatalf("echo: reaction %+v", re)
	}
	wantRate(1.1, 9.45)

	// Hold: no growth until 3s, even with the rate used.
	send(1.5, 9)
	wantRate(2.9, 9.45)
	// Additive probe: +0.1×10.5 for each Step that used the rate.
	send(2, 8)
	wantRate(3, 10.5)
	wantRate(4, 10.5) // nothing sent in [3,4): no growth
	send(4, 8)
	wantRate(5, 11.55) // above the peak: the increase doubles per second
	send(5, 9)
	wantRate(6, 11.55+2.1)

	// A 429 while probing: the measurement since the last cut (34 over
	// 5s, a lower bound) is below what the key sustained just before; a
	// cut keeps at least ProbeKeep of the rate that drew it.
	ep = a.Sent(sec(6), req)
	if re := a.RateLimited(sec(6), ep, req, false); re.Echo || re.Pause != DefaultAIMD.BackoffBase {
		t.Fatalf("429 while probing: reaction %+v", re)
	}
	wantRate(6, 0.9*0.8*13.65)

	// Another 429 without a success between: the pause doubles; nothing
	// was accepted to measure, so the cut is by Decrease (0.7) and the
	// measurement goes on.
	ep = a.Sent(sec(6.5), req)
	if re := a.RateLimited(sec(6.5), ep, req, false); re.Echo || re.Pause != 2*DefaultAIMD.BackoffBase {
		t.Fatalf("second hint-less 429 in a row: reaction %+v, want pause %v", re, 2*DefaultAIMD.BackoffBase)
	}
	wantRate(6.5, 0.7*0.9*0.8*13.65)

	// A success undoes one doubling of the next hint-less pause (4× → 2×
	// the base); a hinted 429 has no pause of its own and leaves the
	// count alone.
	a.Answered(a.Sent(sec(7), req), req, req)
	ep = a.Sent(sec(7.5), req)
	if re := a.RateLimited(sec(7.5), ep, req, true); re.Echo || re.Pause != 0 || !re.Drain {
		t.Fatalf("hinted 429: reaction %+v", re)
	}
	ep = a.Sent(sec(8), req)
	if re := a.RateLimited(sec(8), ep, req, false); re.Pause != 2*DefaultAIMD.BackoffBase {
		t.Fatalf("hint-less 429 after a success: reaction %+v, want pause %v", re, 2*DefaultAIMD.BackoffBase)
	}
	if a.Cuts() != 5 {
		t.Fatalf("cuts = %d, want 5", a.Cuts())
	}
	// Headers took over: the rates are forgotten.
	a.Reset()
	wantRate(9, 0)
}

// TestAIMDRampDoublesPerRoundTrip: the slow start doubles the request rate
// once per round trip the key used it (TCP's slow start), the answers'
// latency floored at Grain and capped at Step: a server answering in 2ms
// is ramped every 10ms (per fixed 100ms Step it took 600ms to reach what it
// sustains), one answering in a second no faster than every 100ms; the
// shared AIMD's ramp (RampPerStep) every 100ms whatever the round trip.
func TestAIMDRampDoublesPerRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		latency, step time.Duration
		start         float64
		conf          AIMDConfig
	}{
		{2 * time.Millisecond, 10 * time.Millisecond, 500, AIMDConfig{}}, // floored at Grain
		{40 * time.Millisecond, 40 * time.Millisecond, 25, AIMDConfig{}},
		{time.Second, 100 * time.Millisecond, 2, AIMDConfig{}}, // capped at Step
		// The shared AIMD's: per Step whatever the round trip.
		{2 * time.Millisecond, 100 * time.Millisecond, 500, SharedAIMD},
	} {
		t.Run(fmt.Sprintf("%v/per-step=%v", tt.latency, tt.conf.RampPerStep), func(t *testing.T) {
			a := NewAIMD(tt.conf)
			req := Cost{Requests: 1}
			a.Ramp(t0, tt.latency)
			var doubled []time.Duration
			last, _ := a.Rates(t0)
			if last != tt.start {
				t.Fatalf("ramp starts at %v/s, want %v", last, tt.start)
			}
			d := 8 * tt.step
			for at := time.Duration(0); at < d; at += time.Millisecond {
				now := t0.Add(at)
				r, _ := a.Rates(now)
				if r != last {
					if r != 2*last {
						t.Fatalf("at %v the rate went %v → %v, want a doubling", at, last, r)
					}
					doubled = append(doubled, at)
					last = r
				}
				// A backlogged key: more than the rate every millisecond,
				// every answer after latency.
				for range int(math.Ceil(r / 1000)) {
					a.Answered(a.Sent(now, req), req, req)
					a.Ramp(now, tt.latency)
				}
			}
			if len(doubled) != 7 {
				t.Fatalf("doubled at %v, want every %v", doubled, tt.step)
			}
			for i, at := range doubled {
				if want := time.Duration(i+1) * tt.step; at != want {
					t.Fatalf("doubling %d at %v, want at %v (every %v; all: %v)", i+1, at, want, tt.step, doubled)
				}
			}
		})
	}
}

// TestAIMDRoundTripIsSmoothed: the round trip the ramp doubles per moves
// by an eighth of each answer's latency, so one slow answer (a connection
// set up) does not slow the ramp, nor one fast answer speed it up.
func TestAIMDRoundTripIsSmoothed(t *testing.T) {
	a := NewAIMD(AIMDConfig{})
	a.Ramp(t0, 80*time.Millisecond)
	if got := a.stepLen(); got != 80*time.Millisecond {
		t.Fatalf("step after the first answer = %v, want its latency", got)
	}
	a.Ramp(t0, 0) // no latency measured: changes nothing
	a.Ramp(t0, 16*time.Millisecond)
	if got := a.stepLen(); got != 72*time.Millisecond {
		t.Fatalf("step after a 16ms answer = %v, want 80 - (80-16)/8 = 72ms", got)
	}
	a.RateLimited(t0, a.Sent(t0, Cost{Requests: 1}), Cost{Requests: 1}, false)
	if got := a.stepLen(); got != DefaultAIMD.Step {
		t.Fatalf("step after the ramp ended = %v, want Step", got)
	}
}

// TestAIMDUnusedRateDoesNotGrow: against a server that takes 5 requests
// a second for 3 s (a request rate is learned), then 20, while its token
// limit binds at 15, the request rate stays near what is sent instead of
// growing with the token rate's probes: it doubled its increase every
// second, to 1e12 RPM "learned from 429s" in a 30 s run's summary.
func TestAIMDUnusedRateDoesNotGrow(t *testing.T) {
	a := NewAIMD(AIMDConfig{})
	srv := &simServer{reqRate: 5, tokRate: 2000}
	tr := simulateAIMD(a, srv, Cost{Requests: 1, Input: 134}, 60*time.Second, func(at time.Duration, srv *simServer) {
		if at == 3*time.Second {
			srv.reqRate = 20
		}
	})
	rr, rt := a.Rates(t0.Add(60 * time.Second))
	sent := float64(tr.accepted+tr.refused) / 60
	t.Logf("request rate %.1f/s, token rate %.0f/s; %d accepted, %d refused", rr, rt, tr.accepted, tr.refused)
	if rt <= 0 || rt > 2*srv.tokRate {
		t.Errorf("token rate %v/s, want near the server's %v", rt, srv.tokRate)
	}
	if rr <= 0 || rr > 4*sent {
		t.Errorf("request rate %v/s, %.0f times the %.1f/s sent: it grew unused", rr, rr/sent, sent)
	}
}
