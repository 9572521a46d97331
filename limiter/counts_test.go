package limiter

import (
	"testing"
	"time"
)

// CountsInput says whether a key's input count matters to its buckets:
// the runner skips the tokenizer where it does not, so a limit given,
// or learned from headers mid-run, must turn it on.
func TestCountsInput(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	given := New(Options{Defaults: Limits{RPM: 600, ITPM: 60000}, Now: clock})
	if !given.CountsInput("k") {
		t.Fatal("--itpm given: an unused key must count input")
	}
	if !AsBudget(New(Options{Defaults: Limits{TPM: 1000}, Now: clock})).(interface{ CountsInput(string) bool }).CountsInput("k") {
		t.Fatal("--tpm given: the budget must count input")
	}
	auto := New(Options{Defaults: Limits{Auto: true}, Now: clock})
	if auto.CountsInput("k") {
		t.Fatal("auto, nothing learned: no bucket reads the input")
	}
	auto.Observe("k", Observation{Requests: Window{Limit: 500, Remaining: 499, Reset: time.Second}})
	if auto.CountsInput("k") {
		t.Fatal("a request limit alone was learned: still no token bucket")
	}
	auto.Observe("k", Observation{Requests: Window{Limit: 500, Remaining: 498, Reset: time.Second}, Tokens: Window{Limit: 30000, Remaining: 29000, Reset: time.Second}})
	if !auto.CountsInput("k") {
		t.Fatal("a token limit learned from headers must turn the input count on")
	}
	if auto.CountsInput("other") {
		t.Fatal("another key learned nothing")
	}
}

func TestDaysCountsTokens(t *testing.T) {
	if NewDays(DaysOptions{Defaults: DayLimits{Requests: 100}}).CountsTokens() {
		t.Fatal("--rpd alone counts no tokens")
	}
	if !NewDays(DaysOptions{Defaults: DayLimits{Tokens: 1e6}}).CountsTokens() {
		t.Fatal("--tpd counts tokens")
	}
	d := NewDays(DaysOptions{})
	d.Observe("k", time.UTC, DayObservation{Requests: Window{Limit: 1000, Remaining: 999, Reset: time.Hour}})
	if d.CountsTokens() {
		t.Fatal("a per-day request window counts no tokens")
	}
	d.Observe("k", time.UTC, DayObservation{Tokens: Window{Limit: 1e6, Remaining: 9e5, Reset: time.Hour}})
	if !d.CountsTokens() {
		t.Fatal("a provider's per-day token window must turn the count on")
	}
}

func TestCountsInputReservation(t *testing.T) {
	now := time.Unix(1000, 0)
	auto := New(Options{Defaults: Limits{Auto: true}, Now: func() time.Time { return now }})
	r, err := auto.Reserve(t.Context(), "k", Cost{Requests: 1, Input: 10})
	if err != nil {
		t.Fatal(err)
	}
	r.Observe(Observation{Requests: Window{Limit: -1, Remaining: -1}, Input: Window{Limit: -1, Remaining: -1}, Output: Window{Limit: -1, Remaining: -1}, Tokens: Window{Limit: 1_000_000, Remaining: 999_000, Reset: time.Second}}, now)
	r.Settle(Cost{Requests: 1, Input: 3})
	if !auto.CountsInput("k") {
		t.Fatalf("learned: %+v", auto.Stats())
	}
}
