package providers

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// counter is a server's per-minute token counter as the tests record it:
// a bucket refilling at limit/60 per second up to full, charged by rule.
type counter struct {
	limit, full float64
	level       float64
	at          time.Time
}

func (c *counter) advance(t time.Time) {
	if t.After(c.at) {
		c.level = math.Min(c.full, c.level+c.limit/60*t.Sub(c.at).Seconds())
		c.at = t
	}
}

// record plays n requests, inflight at a time, through a server whose
// counter charges by rule, paced as a client that keeps the counter just
// above what its next request needs (the load at which the rule matters),
// and returns the learner's verdict and how many readings it took. The
// client sees each instant with up to skew of error, as a real client
// stamps its own send and receive times.
func record(t *testing.T, rule ChargeRule, n, inflight int, skew time.Duration, seed uint64) (ChargeRule, int) {
	return recordPaced(t, rule, n, inflight, skew, seed, false)
}

// recordPaced is record; with reserveCap the client paces itself by its
// own counter charging input + max_tokens whatever the server's rule, as
// llmrun does before the headers have told it otherwise.
func recordPaced(t *testing.T, rule ChargeRule, n, inflight int, skew time.Duration, seed uint64, reserveCap bool) (ChargeRule, int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := &counter{limit: 300000, full: 5000, level: 5000, at: t0}
	own := c // the counter the client paces by
	if reserveCap {
		own = &counter{limit: c.limit, full: c.full, level: c.level, at: t0}
	}
	jitter := func(at time.Time) time.Time {
		if skew == 0 {
			return at
		}
		return at.Add(time.Duration(rng.Int64N(int64(2*skew))) - skew)
	}
	type req struct {
		id           uint64
		head, done   time.Time
		in, out, cap int64
		read, ended  bool
	}
	var live []*req
	l := NewChargeLearner()
	readings, sent := 0, 0
	for now := t0; sent < n || len(live) > 0; now = now.Add(time.Millisecond) {
		c.advance(now)
		own.advance(now)
		kept := live[:0]
		for _, q := range live {
			if !q.read && !q.head.After(now) {
				q.read = true
				readings++
				l.Reading(jitter(now), int64(math.Max(0, math.Floor(c.level))), int64(c.limit))
			}
			if q.read && !q.done.After(now) {
				if rule == ChargeOutput {
					c.level -= float64(q.out)
				}
				l.Ended(q.id, time.Time{}, jitter(now), q.in, q.out, true)
				q.ended = true
			}
			if !q.ended {
				kept = append(kept, q)
			}
		}
		live = kept
		if got, done := l.Decide(); done {
			return got, readings
		}
		// The first request goes alone (llmrun's first-on-key gate).
		if sent == n || len(live) >= inflight || sent == 1 && readings == 0 {
			continue
		}
		q := &req{id: uint64(sent), in: int64(200 + rng.IntN(800)), out: int64(20 + rng.IntN(80)), cap: 400}
		need := float64(q.in) + 300
		if rule == ChargeCap || reserveCap {
			need += float64(q.cap)
		}
		if own.level < need {
			continue
		}
		if reserveCap {
			own.level -= float64(q.in + q.cap)
		}
		c.level -= float64(q.in)
		if rule == ChargeCap {
			c.level -= float64(q.cap)
		}
		q.head = now.Add(time.Duration(20+rng.IntN(30)) * time.Millisecond)
		q.done = q.head.Add(time.Duration(10+rng.IntN(80)) * time.Millisecond)
		// Sent after this millisecond's readings were written.
		l.Sent(q.id, jitter(now.Add(time.Millisecond/2)), q.in, q.cap)
		live = append(live, q)
		sent++
	}
	return ChargeUnknown, readings
}

// TestChargeLearnerFindsTheRule: recorded header sequences of servers
// charging by each rule, one request at a time and eight in flight, with
// and without clock skew between client and server: the learner names the
// server's rule within the first few dozen responses.
func TestChargeLearnerFindsTheRule(t *testing.T) {
	for _, rule := range []ChargeRule{ChargeInput, ChargeOutput, ChargeCap} {
		for _, tc := range []struct {
			inflight int
			skew     time.Duration
		}{{1, 0}, {8, 0}, {8, time.Millisecond}, {16, 2 * time.Millisecond}} {
			for seed := range uint64(5) {
				got, reads := record(t, rule, 200, tc.inflight, tc.skew, seed)
				if got != rule {
					t.Errorf("%v, %d in flight, skew %v, seed %d: learned %v after %d readings", rule, tc.inflight, tc.skew, seed, got, reads)
				} else if reads > 48 {
					t.Errorf("%v, %d in flight, seed %d: took %d readings", rule, tc.inflight, seed, reads)
				}
			}
		}
	}
}

// TestChargeLearnerDownward: a client reserving max_tokens against a
// server that charges less keeps the server's counter near full, so no
// interval is exact; the drops it does show refute the max_tokens charge,
// and the learner settles on input + generated output, the safe one of
// the two it cannot tell apart.
func TestChargeLearnerDownward(t *testing.T) {
	for _, rule := range []ChargeRule{ChargeInput, ChargeOutput} {
		for seed := range uint64(5) {
			got, reads := recordPaced(t, rule, 200, 8, time.Millisecond, seed, true)
			if got != ChargeOutput && got != rule {
				t.Errorf("%v, seed %d: learned %v after %d readings", rule, seed, got, reads)
			}
		}
	}
	// A server charging the cap is never talked down by the same pacing.
	for seed := range uint64(5) {
		if got, reads := recordPaced(t, ChargeCap, 200, 8, time.Millisecond, seed, true); got != ChargeCap {
			t.Errorf("cap, seed %d: learned %v after %d readings", seed, got, reads)
		}
	}
}

// TestChargeLearnerRefusedNotCharged: requests the server refused (429)
// were charged nothing, and a learner told so still finds ChargeCap.
func TestChargeLearnerRefusedNotCharged(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := NewChargeLearner()
	rem := int64(10000)
	// limit 60,000/min: 1 token a millisecond; a reading every 10 ms.
	for i := range 30 {
		at := t0.Add(time.Duration(i*10) * time.Millisecond)
		l.Sent(uint64(2*i), at.Add(time.Millisecond), 100, 400)
		l.Sent(uint64(2*i+1), at.Add(2*time.Millisecond), 100, 400)
		l.Ended(uint64(2*i+1), time.Time{}, at.Add(3*time.Millisecond), 0, 0, false) // a 429
		l.Ended(uint64(2*i), time.Time{}, at.Add(4*time.Millisecond), 100, 30, true)
		rem = rem + 10 - 500
		l.Reading(at.Add(5*time.Millisecond), rem, 60000)
	}
	if got, done := l.Decide(); !done || got != ChargeCap {
		t.Fatalf("learned %v (done %v), want %v", got, done, ChargeCap)
	}
}

// TestChargeLearnerGivesUp: a counter whose moves have nothing to do with
// the requests
// decides nothing, and says so once it has read enough.
func TestChargeLearnerGivesUp(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := NewChargeLearner()
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range chargeReadings {
		at := t0.Add(time.Duration(i*10) * time.Millisecond)
		l.Sent(uint64(i), at, 100, 400)
		l.Ended(uint64(i), time.Time{}, at.Add(time.Millisecond), 100, 50, true)
		l.Reading(at.Add(2*time.Millisecond), 3000+rng.Int64N(2000), 60000)
		if got, done := l.Decide(); got != ChargeUnknown {
			t.Fatalf("reading %d: learned %v from noise", i, got)
		} else if done && i < chargeReadings-1 {
			t.Fatalf("gave up after %d readings", i+1)
		}
	}
	if _, done := l.Decide(); !done {
		t.Fatal("still learning after chargeReadings readings")
	}
}

// TestChargeLearnerOutputCounter: Anthropic's output-tokens counter takes
// no input, so a learner told it reads one finds the generated-output
// rule however large the inputs are.
func TestChargeLearnerOutputCounter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := NewChargeLearner()
	l.OutputOnly = true
	rem := int64(8000)
	// limit 60,000/min: 1 token a millisecond; a reading every 10 ms.
	for i := range 30 {
		at := t0.Add(time.Duration(i*10) * time.Millisecond)
		l.Sent(uint64(i), at.Add(time.Millisecond), 1000, 400)
		l.Ended(uint64(i), time.Time{}, at.Add(4*time.Millisecond), 1000, 50, true)
		rem = rem + 10 - 50
		l.Reading(at.Add(5*time.Millisecond), rem, 60000)
	}
	if got, done := l.Decide(); !done || got != ChargeOutput {
		t.Fatalf("learned %v (done %v), want %v", got, done, ChargeOutput)
	}
}
