package retry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// t0 is a whole minute, so budget buckets start at t0.
var t0 = time.Unix(1_800_000_000, 0).UTC()

// allClasses lists every class providers/errors.go defines. The check that
// the class after the last one has no name fails when a class is added, so
// these tables get updated with it.
func allClasses(t *testing.T) []providers.Class {
	t.Helper()
	var cs []providers.Class
	for c := providers.ClassUnknown; c <= providers.ClassTooLarge; c++ {
		cs = append(cs, c)
	}
	if s := (providers.ClassTooLarge + 1).String(); !strings.HasPrefix(s, "class(") {
		t.Fatalf("providers has a class after ClassTooLarge (%s): add it to these tests", s)
	}
	return cs
}

// upper draws the largest value, lower the smallest.
func upper(n int64) int64 { return n - 1 }
func lower(int64) int64   { return 0 }

func TestDecideExamples(t *testing.T) {
	p := Policy{} // defaults: 6 attempts, 10m, 500ms..30s, server 5m
	tests := map[string]struct {
		a      Attempt
		now    time.Time
		int63n func(int64) int64
		want   Decision
	}{
		"first failure, longest draw":        {Attempt{N: 1, Class: providers.ClassServer}, t0, upper, Decision{true, 500 * time.Millisecond, ReasonBackoff}},
		"first failure, shortest draw":       {Attempt{N: 1, Class: providers.ClassServer}, t0, lower, Decision{true, 0, ReasonBackoff}},
		"nil rand takes the cap":             {Attempt{N: 3, Class: providers.ClassNetwork}, t0, nil, Decision{true, 2 * time.Second, ReasonBackoff}},
		"cap reaches Max":                    {Attempt{N: 5, Class: providers.ClassOverloaded}, t0, upper, Decision{true, 8 * time.Second, ReasonBackoff}},
		"last allowed retry":                 {Attempt{N: 5, Class: providers.ClassTimeout}, t0, nil, Decision{true, 8 * time.Second, ReasonBackoff}},
		"attempt MaxAttempts is the last":    {Attempt{N: 6, Class: providers.ClassTimeout}, t0, nil, Decision{Reason: ReasonMaxAttempts}},
		"attempt past MaxAttempts":           {Attempt{N: 60, Class: providers.ClassTimeout}, t0, nil, Decision{Reason: ReasonMaxAttempts}},
		"attempt 0 counts as 1":              {Attempt{N: 0, Class: providers.ClassServer}, t0, nil, Decision{true, 500 * time.Millisecond, ReasonBackoff}},
		"overload past MaxAttempts":          {Attempt{N: 6, Class: providers.ClassOverloaded}, t0, nil, Decision{Reason: ReasonMaxAttempts}},
		"paced past MaxAttempts":             {Attempt{N: 6, Class: providers.ClassOverloaded, Paced: true}, t0, nil, Decision{true, 16 * time.Second, ReasonBackoff}},
		"paced 429 far past MaxAttempts":     {Attempt{N: 60, Class: providers.ClassRateLimited, Paced: true}, t0, nil, Decision{true, 30 * time.Second, ReasonBackoff}},
		"paced: only the deadline ends it":   {Attempt{N: 9, Class: providers.ClassOverloaded, Paced: true, Start: t0}, t0.Add(10*time.Minute - time.Second), nil, Decision{Reason: ReasonDeadline}},
		"paced: not retryable still never":   {Attempt{N: 1, Class: providers.ClassInvalid, Paced: true}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"invalid never":                      {Attempt{N: 1, Class: providers.ClassInvalid}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"auth never":                         {Attempt{N: 1, Class: providers.ClassAuth, RetryAfter: time.Second, HasRetryAfter: true}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"quota never":                        {Attempt{N: 1, Class: providers.ClassQuota}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"redirect never":                     {Attempt{N: 1, Class: providers.ClassRedirect}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"oversize answer never":              {Attempt{N: 1, Class: providers.ClassTooLarge}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"x-should-retry false stops a 5xx":   {Attempt{N: 1, Class: providers.ClassServer, ShouldRetry: -1}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"x-should-retry true retries a 4xx":  {Attempt{N: 1, Class: providers.ClassInvalid, ShouldRetry: 1}, t0, nil, Decision{true, 500 * time.Millisecond, ReasonBackoff}},
		"x-should-retry true: auth stays":    {Attempt{N: 1, Class: providers.ClassAuth, ShouldRetry: 1}, t0, nil, Decision{Reason: ReasonNotRetryable}},
		"x-should-retry true, last attempt":  {Attempt{N: 6, Class: providers.ClassInvalid, ShouldRetry: 1}, t0, nil, Decision{Reason: ReasonMaxAttempts}},
		"hint floors a short draw":           {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: 2 * time.Second, HasRetryAfter: true}, t0, lower, Decision{true, 2 * time.Second, ReasonRetryAfter}},
		"hint jitter is at least 250ms":      {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: 2 * time.Second, HasRetryAfter: true}, t0, upper, Decision{true, 2250 * time.Millisecond, ReasonRetryAfter}},
		"hint jitter is 10% of long hints":   {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: 40 * time.Second, HasRetryAfter: true}, t0, upper, Decision{true, 44 * time.Second, ReasonRetryAfter}},
		"hint zero: the backoff draw wins":   {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: 0, HasRetryAfter: true}, t0, upper, Decision{true, 500 * time.Millisecond, ReasonBackoff}},
		"longer draw beats a short hint":     {Attempt{N: 5, Class: providers.ClassOverloaded, RetryAfter: 100 * time.Millisecond, HasRetryAfter: true}, t0, upper, Decision{true, 8 * time.Second, ReasonBackoff}},
		"hint without HasRetryAfter ignored": {Attempt{N: 1, Class: providers.ClassServer, RetryAfter: time.Minute}, t0, upper, Decision{true, 500 * time.Millisecond, ReasonBackoff}},
		"negative hint is absent":            {Attempt{N: 1, Class: providers.ClassServer, RetryAfter: -time.Minute, HasRetryAfter: true}, t0, upper, Decision{true, 500 * time.Millisecond, ReasonBackoff}},
		"huge hint clamped, jitter too":      {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: providers.MaxRetryAfter, HasRetryAfter: true}, t0, upper, Decision{true, 5 * time.Minute, ReasonRetryAfter}},
		"max duration hint clamped":          {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: math.MaxInt64, HasRetryAfter: true}, t0, lower, Decision{true, 5 * time.Minute, ReasonRetryAfter}},
		"deadline: delay ends exactly on it": {Attempt{N: 1, Class: providers.ClassServer, Start: t0}, t0.Add(10*time.Minute - 500*time.Millisecond), nil, Decision{true, 500 * time.Millisecond, ReasonBackoff}},
		"deadline: 1ns past":                 {Attempt{N: 1, Class: providers.ClassServer, Start: t0}, t0.Add(10*time.Minute - 499*time.Millisecond), nil, Decision{Reason: ReasonDeadline}},
		"deadline: already past":             {Attempt{N: 1, Class: providers.ClassServer, Start: t0}, t0.Add(11 * time.Minute), lower, Decision{Reason: ReasonDeadline}},
		"deadline: hint ends exactly on it":  {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: time.Minute, HasRetryAfter: true, Start: t0}, t0.Add(9 * time.Minute), lower, Decision{true, time.Minute, ReasonRetryAfter}},
		"deadline: hint would pass it":       {Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: time.Minute, HasRetryAfter: true, Start: t0}, t0.Add(9*time.Minute + time.Nanosecond), lower, Decision{Reason: ReasonDeadline}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			a := tt.a
			if a.Start.IsZero() {
				a.Start = tt.now
			}
			if got := p.Decide(a, tt.now, tt.int63n); got != tt.want {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPacedEveryClass(t *testing.T) {
	for _, c := range allClasses(t) {
		if want := c == providers.ClassRateLimited || c == providers.ClassOverloaded; Paced(c) != want {
			t.Errorf("Paced(%v) = %v", c, !want)
		}
	}
	// AttemptOf: at least 1, class and hint from the error.
	a := AttemptOf(0, fmt.Errorf("x: %w", &providers.Error{Class: providers.ClassOverloaded, RetryAfter: time.Second, HasRetryAfter: true}), t0)
	if a != (Attempt{N: 1, Class: providers.ClassOverloaded, RetryAfter: time.Second, HasRetryAfter: true, Start: t0}) {
		t.Errorf("AttemptOf = %+v", a)
	}
}

func TestDecideCustomPolicy(t *testing.T) {
	p := Policy{MaxAttempts: 3, Deadline: time.Minute, Base: time.Second, Max: 3 * time.Second, MaxServerDelay: 10 * time.Second}
	for n, want := range map[int]Decision{
		1: {true, time.Second, ReasonBackoff},
		2: {true, 2 * time.Second, ReasonBackoff},
		3: {Reason: ReasonMaxAttempts},
	} {
		if got := p.Decide(Attempt{N: n, Class: providers.ClassServer, Start: t0}, t0, nil); got != want {
			t.Errorf("attempt %d: %+v, want %+v", n, got, want)
		}
	}
	got := p.Decide(Attempt{N: 1, Class: providers.ClassRateLimited, RetryAfter: time.Hour, HasRetryAfter: true, Start: t0}, t0, nil)
	if want := (Decision{true, 10 * time.Second, ReasonRetryAfter}); got != want {
		t.Errorf("huge hint: %+v, want %+v", got, want)
	}
	if got := p.Decide(Attempt{N: 2, Class: providers.ClassServer, Start: t0}, t0, nil); got.Delay != 2*time.Second {
		t.Errorf("Max below 2·Base: %v", got.Delay)
	}
	if got := (Policy{MaxAttempts: 1}).Decide(Attempt{N: 1, Class: providers.ClassServer}, t0, nil); got.Retry {
		t.Errorf("MaxAttempts 1 retried: %+v", got)
	}
	if got, want := p.DeadlineAt(t0), t0.Add(time.Minute); !got.Equal(want) {
		t.Errorf("DeadlineAt = %v, want %v", got, want)
	}
	if got, want := (Policy{}).DeadlineAt(t0), t0.Add(DefaultDeadline); !got.Equal(want) {
		t.Errorf("default DeadlineAt = %v, want %v", got, want)
	}
}

// TestDecideMatrix runs every class × attempt × retry-after kind × deadline
// edge with the shortest draw, the longest draw and a seeded rand, and
// checks each decision against the rules.
func TestDecideMatrix(t *testing.T) {
	p := Policy{}
	type hint struct {
		name string
		d    time.Duration
		has  bool
	}
	hints := []hint{
		{"none", 0, false},
		{"zero", 0, true},
		{"small", 100 * time.Millisecond, true},
		{"longer than backoff", 45 * time.Second, true},
		{"negative", -3 * time.Second, true},
		{"huge", providers.MaxRetryAfter, true},
	}
	// elapsed is how far into the 10m deadline the failure happened.
	elapsed := []time.Duration{0, 5 * time.Minute, 10*time.Minute - 300*time.Millisecond, 10 * time.Minute, 20 * time.Minute}
	rng := rand.New(rand.NewPCG(1, 2))
	draws := map[string]func(int64) int64{"lower": lower, "upper": upper, "seeded": rng.Int64N}
	for _, c := range allClasses(t) {
		for n := 1; n <= 8; n++ {
			for _, h := range hints {
				for _, el := range elapsed {
					for dname, src := range draws {
						name := fmt.Sprintf("%s/attempt%d/hint-%s/at-%v/%s", c, n, h.name, el, dname)
						a := Attempt{N: n, Class: c, RetryAfter: h.d, HasRetryAfter: h.has, Start: t0}
						now := t0.Add(el)
						calls := 0
						int63n := func(k int64) int64 {
							if k <= 0 {
								t.Fatalf("%s: int63n(%d)", name, k)
							}
							calls++
							return src(k)
						}
						d := p.Decide(a, now, int63n)
						if calls > 2 {
							t.Errorf("%s: %d draws", name, calls)
						}
						checkDecision(t, name, p.withDefaults(), a, now, d, dname)
					}
				}
			}
		}
	}
}

// checkDecision checks d against the rules, independently of Decide's code.
// For the lower and upper draws the delay is known exactly; for a seeded
// draw only its range.
func checkDecision(t *testing.T, name string, p Policy, a Attempt, now time.Time, d Decision, draws string) {
	t.Helper()
	switch {
	case !a.Class.Retryable():
		if d != (Decision{Reason: ReasonNotRetryable}) {
			t.Errorf("%s: %+v, want not retryable", name, d)
		}
		return
	case a.N >= p.MaxAttempts && !a.Paced:
		if d != (Decision{Reason: ReasonMaxAttempts}) {
			t.Errorf("%s: %+v, want max attempts", name, d)
		}
		return
	}
	bcap := min(p.Max, p.Base<<min(a.N-1, 20))
	lo, hi := time.Duration(0), bcap
	hintLo, hintHi := time.Duration(-1), time.Duration(-1)
	if a.HasRetryAfter && a.RetryAfter >= 0 {
		h := min(a.RetryAfter, p.MaxServerDelay)
		hintLo, hintHi = h, min(h+max(h/10, MinHintJitter), p.MaxServerDelay)
		lo, hi = h, max(bcap, hintHi)
	}
	deadline := a.Start.Add(p.Deadline)
	var want Decision
	switch draws {
	case "lower":
		want = Decision{true, 0, ReasonBackoff}
		if hintLo > 0 {
			want = Decision{true, hintLo, ReasonRetryAfter}
		}
	case "upper":
		want = Decision{true, bcap, ReasonBackoff}
		if hintHi > bcap {
			want = Decision{true, hintHi, ReasonRetryAfter}
		}
	}
	if want.Retry {
		if now.Add(want.Delay).After(deadline) {
			want = Decision{Reason: ReasonDeadline}
		}
		if d != want {
			t.Errorf("%s: %+v, want %+v", name, d, want)
		}
		return
	}
	// Seeded draw.
	if !d.Retry {
		if d.Reason != ReasonDeadline || d.Delay != 0 {
			t.Errorf("%s: %+v, want retry or deadline", name, d)
		}
		if !now.Add(hi).After(deadline) {
			t.Errorf("%s: refused for the deadline though every possible delay fits", name)
		}
		return
	}
	if now.Add(d.Delay).After(deadline) {
		t.Errorf("%s: delay %v passes the deadline", name, d.Delay)
	}
	if d.Delay < lo || d.Delay > hi {
		t.Errorf("%s: delay %v outside [%v, %v]", name, d.Delay, lo, hi)
	}
	if d.Delay > max(p.Max, p.MaxServerDelay) {
		t.Errorf("%s: delay %v above every bound", name, d.Delay)
	}
	switch d.Reason {
	case ReasonBackoff:
		if d.Delay > bcap {
			t.Errorf("%s: backoff delay %v above cap %v", name, d.Delay, bcap)
		}
	case ReasonRetryAfter:
		if hintLo < 0 || d.Delay < hintLo || d.Delay > hintHi {
			t.Errorf("%s: retry-after delay %v outside hint [%v, %v]", name, d.Delay, hintLo, hintHi)
		}
	default:
		t.Errorf("%s: reason %q", name, d.Reason)
	}
}

func TestDecideReproducible(t *testing.T) {
	run := func() []Decision {
		r := rand.New(rand.NewPCG(42, 7))
		var out []Decision
		for i := range 200 {
			a := Attempt{N: 1 + i%5, Class: providers.ClassOverloaded, Start: t0}
			if i%3 == 0 {
				a.RetryAfter, a.HasRetryAfter = time.Duration(i)*100*time.Millisecond, true
			}
			out = append(out, Policy{}.Decide(a, t0, r.Int64N))
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}

// TestFullJitterDistribution checks draws are uniform over [0, cap]: mean
// near cap/2, every tenth of the range about equally hit, both ends reached.
func TestFullJitterDistribution(t *testing.T) {
	const draws = 200_000
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 3, 7} {
		bcap := backoffCap(DefaultBase, DefaultMax, n)
		var sum float64
		var bins [10]int
		lo, hi := bcap, time.Duration(0)
		for range draws {
			d := Policy{MaxAttempts: 100}.Decide(Attempt{N: n, Class: providers.ClassServer, Start: t0}, t0, r.Int64N).Delay
			if d < 0 || d > bcap {
				t.Fatalf("attempt %d: %v outside [0, %v]", n, d, bcap)
			}
			sum += float64(d)
			bins[min(int(float64(d)/float64(bcap)*10), 9)]++
			lo, hi = min(lo, d), max(hi, d)
		}
		mean := sum / draws / float64(bcap)
		if math.Abs(mean-0.5) > 0.01 {
			t.Errorf("attempt %d: mean %.4f of cap, want ≈ 0.5", n, mean)
		}
		for i, b := range bins {
			if frac := float64(b) / draws; math.Abs(frac-0.1) > 0.01 {
				t.Errorf("attempt %d: bin %d has %.4f of draws, want ≈ 0.1", n, i, frac)
			}
		}
		if lo > bcap/1000 || hi < bcap-bcap/1000 {
			t.Errorf("attempt %d: range [%v, %v] does not span [0, %v]", n, lo, hi, bcap)
		}
	}
}

func TestBackoffCapNoOverflow(t *testing.T) {
	for _, n := range []int{-5, 0, 1, 2, 62, 63, 64, 1000, math.MaxInt} {
		got := backoffCap(time.Hour, time.Duration(math.MaxInt64), n)
		if got <= 0 {
			t.Errorf("n=%d: cap %v overflowed", n, got)
		}
	}
	if got := draw(func(n int64) int64 { return n - 1 }, time.Duration(math.MaxInt64)); got != math.MaxInt64-1 {
		t.Errorf("draw at MaxInt64 = %v", got)
	}
}

func TestAttemptOf(t *testing.T) {
	err := fmt.Errorf("send: %w", &providers.Error{Class: providers.ClassRateLimited, Status: 429, RetryAfter: 3 * time.Second, HasRetryAfter: true})
	got := AttemptOf(2, err, t0)
	want := Attempt{N: 2, Class: providers.ClassRateLimited, RetryAfter: 3 * time.Second, HasRetryAfter: true, Start: t0}
	if got != want {
		t.Errorf("AttemptOf = %+v, want %+v", got, want)
	}
	if got := AttemptOf(1, fmt.Errorf("plain"), t0); got.Class != providers.ClassUnknown || got.HasRetryAfter {
		t.Errorf("plain error: %+v", got)
	}
}
