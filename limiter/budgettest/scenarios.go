package budgettest

import (
	"fmt"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

const (
	ms  = time.Millisecond
	sec = time.Second
)

func req() limiter.Cost              { return limiter.Cost{Requests: 1} }
func tok(in, out int64) limiter.Cost { return limiter.Cost{Requests: 1, Input: in, Output: out} }
func hint(d time.Duration) limiter.Refusal {
	return limiter.Refusal{RetryAfter: d, HasRetryAfter: true}
}

// Scenarios returns the suite's scenarios. The expectations follow the
// package limiter documentation; the arithmetic is in the comments.
func Scenarios() []Scenario {
	return []Scenario{
		burstAndRefill(), allOrNothing(), reconcile(), failAndCancel(), largeRequest(),
		skewAndHeadroom(), concurrency(), headersLower(), combinedIgnored(),
		learnedLimits(), pauses(), priorityAging(), priorityStrict(), refusedUnheaded(),
		slotQueue(), learnedBucket(), laterPauseKept(), burstAboveMinute(), requestHeaders(),
		tiesInArrival(), keyHeadersLearn(), autoRamp(), hintlessRetryAfter(),
		tooLargeWhileQueued(), pauseAndBucket(), refusedEchoes(), refusedEchoesDescribed(),
	}
}

// 1 request/s, Burst 3s: three at once, then one a second.
func burstAndRefill() Scenario {
	return Scenario{Name: "burst and refill", Config: Config{Limits: limiter.Limits{RPM: 60, Burst: 3 * sec}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Reserve("b", req()), "admitted"},
		{0, Reserve("c", req()), "admitted"},
		{0, Reserve("d", req()), "wait 1s"},
		{0, ReserveWait("d", req()), "admitted at 1s after 1 waits"},
		{1500 * ms, Reserve("e", req()), "wait 500ms"},
		{10 * sec, Stats(), "inflight=4 waiting=0 reservations=4 429=0 overloaded=0 clamped=0 paused=- learned=false limits=60/0/0/0"},
	}}
}

// Input 10/s (cap 100), output 2/s (cap 20), combined 12/s (cap 120): an
// admission takes from every bucket or from none.
func allOrNothing() Scenario {
	return Scenario{Name: "all or nothing", Config: Config{Limits: limiter.Limits{ITPM: 600, OTPM: 120, TPM: 720, Burst: 10 * sec}}, Steps: []Step{
		{0, Reserve("a", tok(80, 10)), "admitted"},        // in 20, out 10, tokens 30
		{0, Reserve("b", tok(10, 15)), "wait 2.5s"},       // out 5 short at 2/s
		{0, Reserve("c", tok(15, 5)), "admitted"},         // b took nothing: in 5, out 5, tokens 10
		{1 * sec, Reserve("d", tok(20, 0)), "wait 500ms"}, // in 15: 5 short at 10/s
		{1 * sec, Reserve("e", tok(0, 7)), "admitted"},    // out 7, tokens 22
	}}
}

// Settle refunds over-reservation (up to capacity) and charges
// under-reservation (a level may go negative).
func reconcile() Scenario {
	return Scenario{Name: "reconcile", Config: Config{Limits: limiter.Limits{ITPM: 600, OTPM: 600, Burst: 10 * sec}}, Steps: []Step{
		{0, Reserve("a", tok(100, 50)), "admitted"},                 // in 0, out 50
		{0, Settle("a", limiter.Cost{Input: 60, Output: 20}), "ok"}, // in 40, out 80
		{0, Reserve("b", tok(40, 80)), "admitted"},                  // in 0, out 0
		{0, Settle("b", limiter.Cost{Input: 70, Output: 80}), "ok"}, // in -30
		{0, Reserve("c", tok(10, 0)), "wait 4s"},                    // 40 short at 10/s
		{0, ReserveWait("c", tok(10, 0)), "admitted at 4s after 1 waits"},
		{4 * sec, Reserve("e", tok(0, 50)), "wait 1s"},    // out 40
		{10 * sec, Reserve("f", tok(50, 50)), "admitted"}, // in 60→10, out 100→50
		{10 * sec, Fail("f"), "ok"},                       // in 60, out 100
		{10 * sec, Reserve("g", tok(60, 100)), "admitted"},
		{10 * sec, Settle("g", limiter.Cost{Input: 500, Output: 0}), "ok"}, // in -440, out 100
		{10 * sec, Reserve("h", tok(0, 100)), "wait 44s"},                  // a debt blocks even a cost of 0
		{10 * sec, Reserve("i", tok(1, 0)), "wait 44.1s"},
	}}
}

// Fail keeps the request charge, Cancel returns it; both free the slot.
func failAndCancel() Scenario {
	return Scenario{Name: "fail and cancel", Config: Config{Limits: limiter.Limits{RPM: 60, Burst: 2 * sec, Concurrency: 2}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Reserve("b", req()), "admitted"},
		{0, Reserve("c", req()), "wait 1s"},
		{0, Cancel("a"), "ok"},
		{0, Reserve("c", req()), "admitted"},
		{0, Fail("b"), "ok"},
		{0, Reserve("d", req()), "wait 1s"},
		{0, Stats(), "inflight=1 waiting=0 reservations=3 429=0 overloaded=0 clamped=0 paused=- learned=false limits=60/0/0/0"},
	}}
}

// A cost above the burst but within the per-minute limit raises the
// capacity for good (topping a full bucket up); above the limit it is too
// large.
func largeRequest() Scenario {
	return Scenario{Name: "large request", Config: Config{Limits: limiter.Limits{ITPM: 6000}}, Steps: []Step{
		{0, Reserve("a", tok(500, 0)), "admitted"},
		{0, Reserve("b", tok(500, 0)), "wait 5s"},
		{0, Reserve("c", tok(6001, 0)), "too large input"},
		{10 * sec, Reserve("d", tok(500, 0)), "admitted"},
		{10 * sec, Reserve("e", tok(6000, 0)), "wait 1m0s"}, // 0 left, capacity now 6000
	}}
}

// Headroom 0.5 halves the rate (0.5/s, cap 2 at Burst 4s); Skew 1s keeps
// half a request beyond the cost.
func skewAndHeadroom() Scenario {
	return Scenario{Name: "skew and headroom", Config: Config{Limits: limiter.Limits{RPM: 60, Headroom: 0.5, Burst: 4 * sec, Skew: sec}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"}, // 2 ≥ 1.5: 1 left
		{0, Reserve("b", req()), "wait 1s"},  // 0.5 short at 0.5/s
		{0, ReserveWait("b", req()), "admitted at 1s after 1 waits"},
		{1 * sec, Reserve("c", req()), "wait 2s"},
	}}
}

// Two in flight at most; a Settle or Fail frees a slot.
func concurrency() Scenario {
	return Scenario{Name: "concurrency", Config: Config{Limits: limiter.Limits{RPM: 600, Concurrency: 2}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Reserve("b", req()), "admitted"},
		{0, Reserve("c", req()), "wait slot"},
		{1 * sec, Settle("a", req()), "ok"},
		{1 * sec, Reserve("c", req()), "admitted"},
		{1 * sec, Reserve("d", req()), "wait slot"},
		{2 * sec, Fail("b"), "ok"},
		{2 * sec, Reserve("d", req()), "admitted"},
		{2 * sec, Stats(), "inflight=2 waiting=0 reservations=4 429=0 overloaded=0 clamped=0 paused=- learned=false limits=600/0/0/0"},
	}}
}

// Headers lower a bucket to what remained (plus refill since they were
// computed, minus what was admitted after the ticket) and never raise it.
func headersLower() Scenario {
	in := func(rem int64) limiter.Observation {
		return limiter.Observation{Input: limiter.Window{Limit: 6000, Remaining: rem}}
	}
	return Scenario{Name: "headers lower", Config: Config{Limits: limiter.Limits{ITPM: 6000}}, Steps: []Step{
		{0, Reserve("a", tok(10, 0)), "admitted"},     // 90
		{0, Reserve("b", tok(10, 0)), "admitted"},     // 80
		{0, Observe("a", in(50), 0), "ok"},            // min(80, 50-10 after a) = 40
		{0, Reserve("c", tok(50, 0)), "wait 100ms"},   // 10 short at 100/s
		{0, Observe("b", in(5000), 0), "ok"},          // never raised
		{0, Reserve("c", tok(40, 0)), "admitted"},     // 0
		{1 * sec, Observe("c", in(20), 500*ms), "ok"}, // min(100, 20+50) = 70
		{1 * sec, Reserve("d", tok(71, 0)), "wait 10ms"},
		{1 * sec, Reserve("e", tok(70, 0)), "admitted"}, // 0
		{2 * sec, ObserveKey(in(200)), "ok"},            // min(100, 200 - 130 in flight) = 70
		{2 * sec, Reserve("f", tok(71, 0)), "wait 10ms"},
		{2 * sec, Reserve("f", tok(70, 0)), "admitted"},
	}}
}

// With input or output windows, the combined window restates them and is
// not read as a combined budget.
func combinedIgnored() Scenario {
	return Scenario{Name: "combined window ignored", Config: Config{Limits: limiter.Limits{ITPM: 6000, TPM: 6000}}, Steps: []Step{
		{0, ObserveKey(limiter.Observation{
			Input:  limiter.Window{Limit: 6000, Remaining: 100},
			Tokens: limiter.Window{Limit: 6000, Remaining: 0},
		}), "ok"},
		{0, Reserve("a", tok(50, 0)), "admitted"},
		{0, ObserveKey(limiter.Observation{Tokens: limiter.Window{Limit: 6000, Remaining: 0}}), "ok"},
		{0, Reserve("b", tok(10, 0)), "wait 600ms"}, // tokens min(50, 0 - 50 in flight)
	}}
}

// Auto mode: a limit the headers name below the configured one is in
// force, for the rate, the capacity and what is too large.
func learnedLimits() Scenario {
	return Scenario{Name: "learned limits", Config: Config{Limits: limiter.Limits{Auto: true, ITPM: 6000}}, Steps: []Step{
		{0, Reserve("a", tok(10, 0)), "admitted"},
		{0, Observe("a", limiter.Observation{Input: limiter.Window{Limit: 600, Remaining: 5}}, 0), "ok"}, // 10/s, cap 10, level 5
		{0, Settle("a", tok(10, 0)), "ok"},
		{0, Reserve("b", tok(20, 0)), "wait 1.5s"}, // capacity raised to 20, level 5
		{0, Reserve("c", tok(601, 0)), "too large input"},
		{0, Stats(), "inflight=0 waiting=0 reservations=1 429=0 overloaded=0 clamped=0 paused=- learned=true limits=0/600/0/0"},
		{0, ReserveWait("b", tok(20, 0)), "admitted at 1.5s after 1 waits"},
	}}
}

// A 429's retry-after pauses the key (cut to MaxPause); an overload pauses
// it only for a hint. The key learned its limits from headers, so no rate
// is learned from the 429s.
func pauses() Scenario {
	rq := limiter.Observation{Requests: limiter.Window{Limit: 600, Remaining: 9}}
	return Scenario{Name: "pauses", Config: Config{Limits: limiter.Limits{Auto: true, RPM: 600}, MaxPause: 60 * sec}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Observe("a", rq, 0), "ok"},
		{0, Refused("a", hint(20*sec)), "ok"},
		{5 * sec, Reserve("b", req()), "wait 15s"},
		{20 * sec, Reserve("b", req()), "admitted"},
		{20 * sec, Refused("b", hint(5*time.Minute)), "ok"}, // cut to 60s
		{30 * sec, Reserve("c", req()), "wait 50s"},
		{80 * sec, Reserve("o", req()), "admitted"},
		{80 * sec, Refused("o", limiter.Refusal{Overloaded: true}), "ok"},
		{80 * sec, Reserve("p", req()), "admitted"},
		{80 * sec, Refused("p", limiter.Refusal{Overloaded: true, RetryAfter: 15 * sec, HasRetryAfter: true}), "ok"},
		{80 * sec, Reserve("q", req()), "wait 15s"},
		{80 * sec, Stats(), "inflight=0 waiting=0 reservations=4 429=2 overloaded=2 clamped=1 paused=1m35s learned=true limits=600/0/0/0"},
	}}
}

// One slot, held: queued Reserves are admitted as slots free, by virtual
// arrival (arrival less priority × Aging).
func priorityAging() Scenario {
	return Scenario{Name: "priority with aging", Config: Config{Limits: limiter.Limits{Concurrency: 1}, Aging: 100 * ms}, Steps: []Step{
		{0, Reserve("hold", req()), "admitted"},
		{100 * ms, Queue("a", req(), 0), "queued"},  // 0.1s
		{150 * ms, Queue("c", req(), 1), "queued"},  // 0.05s
		{200 * ms, Queue("d", req(), -1), "queued"}, // 0.3s
		{500 * ms, Queue("b", req(), 1), "queued"},  // 0.4s
		{1 * sec, Release("hold", 4), "c a d b"},
	}}
}

// Without aging, priority decides and arrival breaks ties.
func priorityStrict() Scenario {
	return Scenario{Name: "priority strict", Config: Config{Limits: limiter.Limits{Concurrency: 1}}, Steps: []Step{
		{0, Reserve("hold", req()), "admitted"},
		{100 * ms, Queue("a", req(), 0), "queued"},
		{150 * ms, Queue("c", req(), 1), "queued"},
		{200 * ms, Queue("d", req(), -1), "queued"},
		{500 * ms, Queue("b", req(), 1), "queued"},
		{1 * sec, Release("hold", 4), "c b a d"},
	}}
}

// 429s on a key no headers describe: the rates learned from 429s (the
// AIMD) pace it. Compared between implementations only.
func refusedUnheaded() Scenario {
	return Scenario{Name: "429 without headers", AIMD: true, Config: Config{Limits: limiter.Limits{RPM: 600}}, Steps: []Step{
		{0, Reserve("a", req()), ""},
		{0, Reserve("b", req()), ""},
		{0, Refused("a", limiter.Refusal{}), ""},
		{0, Reserve("c", req()), ""},
		{0, ReserveWait("c", req()), ""},
		{10 * sec, Refused("b", hint(2*sec)), ""},
		{10 * sec, ReserveWait("d", req()), ""},
		{10 * sec, Settle("d", req()), ""},
		{10 * sec, ReserveWait("e", req()), ""},
		{10 * sec, Stats(), ""},
	}}
}

// A Reserve queued for a slot is admitted when one frees, at that
// instant; one queued behind it waits its turn.
func slotQueue() Scenario {
	return Scenario{Name: "slot queue", Config: Config{Limits: limiter.Limits{RPM: 600, Concurrency: 1}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{100 * ms, Queue("b", req(), 0), "queued"},
		{200 * ms, Queue("c", req(), 1), "queued"},
		{1 * sec, Release("a", 2), "c b"},
		{2 * sec, Stats(), "inflight=1 waiting=0 reservations=3 429=0 overloaded=0 clamped=0 paused=- learned=false limits=600/0/0/0"},
	}}
}

// Auto mode without limits: headers create a bucket (full, then lowered);
// a ticket admitted before it existed is not reconciled on it; a named
// limit above an explicit one is not in force.
func learnedBucket() Scenario {
	in := func(lim, rem int64) limiter.Observation {
		return limiter.Observation{Input: limiter.Window{Limit: lim, Remaining: rem}, Output: limiter.Window{Limit: 6000, Remaining: 6000}}
	}
	return Scenario{Name: "learned bucket", Config: Config{Limits: limiter.Limits{Auto: true, OTPM: 600}}, Steps: []Step{
		{0, Reserve("a", tok(100, 10)), "admitted"},
		{0, Observe("a", in(600, 4), 0), "ok"},                    // input 10/s, cap 10, level 4; output stays 600/min
		{0, Settle("a", limiter.Cost{Input: 0, Output: 0}), "ok"}, // input not charged to a: no refund
		{0, Reserve("b", tok(10, 0)), "wait 600ms"},
		{0, Stats(), "inflight=0 waiting=0 reservations=1 429=0 overloaded=0 clamped=0 paused=- learned=true limits=0/600/600/0"},
		{0, ReserveWait("b", tok(10, 0)), "admitted at 600ms after 1 waits"},
		{600 * ms, Reserve("c", tok(0, 10)), "admitted"}, // output refunded by a's Settle
		{600 * ms, Reserve("d", tok(0, 1)), "wait 100ms"},
		// Not played: at 700ms the in-process Auto window (2: b and c in
		// flight) would keep d waiting for a slot; the Redis budget learns
		// no window (see package redisbudget).
	}}
}

// A shorter pause never cuts a later one short.
func laterPauseKept() Scenario {
	rq := limiter.Observation{Requests: limiter.Window{Limit: 600, Remaining: 9}}
	return Scenario{Name: "later pause kept", Config: Config{Limits: limiter.Limits{Auto: true, RPM: 600}, MaxPause: time.Minute}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Observe("a", rq, 0), "ok"},
		{0, Settle("a", req()), "ok"}, // the Auto window grows to 2
		{0, Reserve("b", req()), "admitted"},
		{0, Reserve("c", req()), "admitted"},
		{0, Refused("b", hint(30*sec)), "ok"},
		{0, Refused("c", hint(10*sec)), "ok"},
		{5 * sec, Reserve("d", req()), "wait 25s"},
		{0, Stats(), "inflight=0 waiting=0 reservations=3 429=2 overloaded=0 clamped=0 paused=30s learned=true limits=600/0/0/0"},
	}}
}

// A Burst longer than a minute holds more than the per-minute limit, and
// admits a single cost that large.
func burstAboveMinute() Scenario {
	return Scenario{Name: "burst above a minute", Config: Config{Limits: limiter.Limits{ITPM: 600, Burst: 2 * time.Minute}}, Steps: []Step{
		{0, Reserve("a", tok(1201, 0)), "too large input"},
		{0, Reserve("b", tok(1200, 0)), "admitted"},
		{0, Reserve("c", tok(1, 0)), "wait 100ms"},
		{0, Cancel("b"), "ok"},
		{0, Reserve("c", tok(1, 0)), "admitted"},
	}}
}

// Request headers computed a while ago get the refill since, less what
// was admitted after the ticket.
func requestHeaders() Scenario {
	rq := func(rem int64) limiter.Observation {
		return limiter.Observation{Requests: limiter.Window{Limit: 60, Remaining: rem}}
	}
	return Scenario{Name: "request headers", Config: Config{Limits: limiter.Limits{RPM: 60, Burst: 10 * sec}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},          // 9
		{0, Reserve("b", req()), "admitted"},          // 8
		{0, Reserve("c", req()), "admitted"},          // 7
		{2 * sec, Observe("a", rq(1), 1500*ms), "ok"}, // min(9, 1 + 1.5 - 2) = 0.5
		{2 * sec, Reserve("d", req()), "wait 500ms"},
		{2 * sec, Settle("a", tok(0, 0)), "ok"},
		{2 * sec, Observe("a", rq(0), 0), "ok"}, // min(0.5, 0 - 2) = -2
		{2 * sec, Reserve("d", req()), "wait 3s"},
	}}
}

// Reserves that arrive at one instant with one priority are admitted in
// the order they were called, however many came before (34 here: the
// 35th and 36th calls of a process wait).
func tiesInArrival() Scenario {
	var steps []Step
	for i := range 34 {
		steps = append(steps, Step{0, Reserve(fmt.Sprint("r", i), req()), "admitted"})
	}
	steps = append(steps,
		Step{0, Queue("x", req(), 0), "queued"},
		Step{0, Queue("y", req(), 0), "queued"},
		Step{0, Release("r0", 2), "x y"},
	)
	return Scenario{Name: "ties in arrival", Config: Config{Limits: limiter.Limits{Concurrency: 34}}, Steps: steps}
}

// Auto mode: headers that belong to no ticket name a limit too; the new
// bucket starts full and is lowered at once.
func keyHeadersLearn() Scenario {
	return Scenario{Name: "key headers learn", Config: Config{Limits: limiter.Limits{Auto: true}}, Steps: []Step{
		{0, ObserveKey(limiter.Observation{Requests: limiter.Window{Limit: 60, Remaining: 0}}), "ok"},
		{0, Reserve("a", req()), "wait 1s"},
		{0, Stats(), "inflight=0 waiting=0 reservations=0 429=0 overloaded=0 clamped=0 paused=- learned=true limits=60/0/0/0"},
		{1 * sec, Reserve("a", req()), "admitted"},
	}}
}

// Auto mode without headers: the first answers start the AIMD's ramp,
// which paces the key. Compared between implementations only.
func autoRamp() Scenario {
	return Scenario{Name: "auto ramp", AIMD: true, Config: Config{Limits: limiter.Limits{Auto: true}}, Steps: []Step{
		{0, Reserve("a", tok(100, 0)), ""},
		{2 * sec, Settle("a", tok(100, 50)), ""},
		// Not compared: Stats right after this Settle. The in-process
		// limiter shows the ramp's rate at once (120/min); a Redis budget
		// shows it from the next Reserve's reply on (its Settle returns no
		// rates): its Stats lag one reservation.
		{2 * sec, ReserveWait("b", tok(100, 0)), ""},
		{3 * sec, Settle("b", tok(100, 50)), ""},
		{3 * sec, ReserveWait("c", tok(100, 0)), ""},
		{3 * sec, Refused("c", limiter.Refusal{}), ""},
		{3 * sec, ReserveWait("d", tok(100, 0)), ""},
		{3 * sec, Stats(), ""},
	}}
}

// A RetryAfter without HasRetryAfter is no hint (see limiter.Refusal).
func hintlessRetryAfter() Scenario {
	rq := limiter.Observation{Requests: limiter.Window{Limit: 600, Remaining: 9}}
	return Scenario{Name: "retry-after without a hint", Config: Config{Limits: limiter.Limits{Auto: true, RPM: 600}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Observe("a", rq, 0), "ok"},
		{0, Refused("a", limiter.Refusal{Overloaded: true, RetryAfter: 10 * sec}), "ok"},
		{0, Reserve("b", req()), "admitted"},
	}}
}

// A queued Reserve that learned limits make too large fails then, instead
// of waiting forever.
func tooLargeWhileQueued() Scenario {
	in := limiter.Observation{Input: limiter.Window{Limit: 600, Remaining: 600}}
	return Scenario{Name: "too large while queued", Config: Config{Limits: limiter.Limits{Auto: true, ITPM: 60000, Concurrency: 1}}, Steps: []Step{
		{0, Reserve("a", tok(100, 0)), "admitted"},
		{0, Queue("b", tok(1000, 0), 0), "queued"},
		{0, Observe("a", in, 0), "ok"},
		{0, Await(), "b:too large input"},
		{0, Stats(), "inflight=1 waiting=0 reservations=1 429=0 overloaded=0 clamped=0 paused=- learned=true limits=0/600/0/0"},
	}}
}

// Paused and short of tokens: the longer of the two is the wait.
func pauseAndBucket() Scenario {
	rq := limiter.Observation{Input: limiter.Window{Limit: 600, Remaining: 0}}
	return Scenario{Name: "pause and bucket", Config: Config{Limits: limiter.Limits{Auto: true, ITPM: 600, Burst: 10 * sec}}, Steps: []Step{
		{0, Reserve("a", tok(10, 0)), "admitted"},
		{0, Observe("a", rq, 0), "ok"},        // input 0: 10/s
		{0, Refused("a", hint(20*sec)), "ok"}, // input 10 back
		{0, Reserve("b", tok(50, 0)), "wait 20s"},
		{0, Reserve("b", tok(100, 0)), "wait 20s"},
		{0, Reserve("b", tok(100, 0)), "wait 20s"},
		{5 * sec, Reserve("c", tok(500, 0)), "wait 44s"}, // 60 held at 5s: 440 short
		{30 * sec, Reserve("c", tok(80, 0)), "admitted"},
	}}
}
