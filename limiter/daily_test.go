package limiter

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// t0 is 10:00 UTC on the day the daily tests run; midnight follows 14 h
// later.
var (
	day0     = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	midnight = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	la, _    = time.LoadLocation("America/Los_Angeles")
)

func wantDayLimit(t *testing.T, err error, dim Dimension, limit float64, reset time.Time) {
	t.Helper()
	var de *DayLimitError
	if !errors.As(err, &de) || de.Dimension != dim || de.Limit != limit || !de.Reset.Equal(reset) {
		t.Fatalf("err %v, want a %v day limit of %g resetting at %v", err, dim, limit, reset)
	}
	if !strings.HasPrefix(err.Error(), "daily limit reached; resets at "+de.Reset.Format(time.RFC3339)) {
		t.Fatalf("message %q", err)
	}
}

func TestDaysOwnRequests(t *testing.T) {
	d := NewDays(DaysOptions{Defaults: DayLimits{Requests: 3}})
	one := Cost{Requests: 1, Input: 10}
	for i := range 3 {
		if _, err := d.TakeAt(day0.Add(time.Duration(i)*time.Hour), "k", time.UTC, one); err != nil {
			t.Fatalf("take %d: %v", i, err)
		}
	}
	_, err := d.TakeAt(day0.Add(4*time.Hour), "k", time.UTC, one)
	wantDayLimit(t, err, DimRequests, 3, midnight)
	wantDayLimit(t, d.CheckAt(midnight.Add(-time.Second), "k", time.UTC, one), DimRequests, 3, midnight)
	if _, err := d.TakeAt(midnight, "k", time.UTC, one); err != nil {
		t.Fatalf("after midnight: %v", err)
	}
	if _, err := d.TakeAt(day0, "other", time.UTC, one); err != nil {
		t.Fatalf("keys are independent: %v", err)
	}
}

// TestDaysTokensSettleAndCancel: tokens count input and output; a settle
// corrects the reservation to the usage, a cancel returns everything, and
// neither touches a day that began since.
func TestDaysTokensSettleAndCancel(t *testing.T) {
	now := day0
	d := NewDays(DaysOptions{Defaults: DayLimits{Requests: 10, Tokens: 1000}, Now: func() time.Time { return now }})
	a, err := d.TakeAt(day0, "k", time.UTC, Cost{Requests: 1, Input: 400, Output: 200})
	if err != nil {
		t.Fatal(err)
	}
	big := Cost{Requests: 1, Input: 300, Output: 200}
	_, err = d.TakeAt(day0, "k", time.UTC, big)
	wantDayLimit(t, err, DimTokens, 1000, midnight)
	d.Settle(a, Cost{Requests: 1, Input: 90, Output: 10}) // 100 used
	b, err := d.TakeAt(day0, "k", time.UTC, big)          // 600 used
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.TakeAt(day0, "k", time.UTC, Cost{Requests: 1, Input: 400})
	if err != nil {
		t.Fatal(err) // exactly 1000
	}
	d.Cancel(c)
	if got := d.Stats()[0]; got.Requests != 2 || got.Tokens != 600 || got.RPD != 10 || got.TPD != 1000 {
		t.Fatalf("stats %+v", got)
	}
	// b settles after midnight: the new day is not credited.
	if _, err := d.TakeAt(midnight, "k", time.UTC, Cost{Requests: 1}); err != nil {
		t.Fatal(err)
	}
	d.Settle(b, Cost{Requests: 1})
	now = midnight
	if got := d.Stats()[0]; got.Requests != 1 || got.Tokens != 0 {
		t.Fatalf("the new day: %+v", got)
	}
}

// TestDaysZone: a key's calendar day is its zone's: Pacific midnight is
// 08:00 UTC in winter.
func TestDaysZone(t *testing.T) {
	d := NewDays(DaysOptions{Defaults: DayLimits{Requests: 1}})
	at := time.Date(2026, 3, 1, 7, 59, 0, 0, time.UTC) // 23:59 PST, Feb 28
	d.TakeAt(at, "k", la, Cost{Requests: 1})
	_, err := d.TakeAt(at, "k", la, Cost{Requests: 1})
	wantDayLimit(t, err, DimRequests, 1, time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
	if _, err := d.TakeAt(at.Add(time.Minute), "k", la, Cost{Requests: 1}); err != nil {
		t.Fatalf("after Pacific midnight: %v", err)
	}
}

// TestDaysObserve: a provider's per-day window (Groq's requests headers)
// limits the key until it is whole again; between two headers the key
// counts its own sends; a limit without a reset holds until midnight.
func TestDaysObserve(t *testing.T) {
	tests := map[string]struct {
		w         Window
		admitted  int       // then refused
		reset     time.Time // of the refusal
		wholeFrom time.Time // when admissions resume
	}{
		"spent, whole in 2 h":  {Window{Limit: 14400, Remaining: 0, Reset: 2 * time.Hour}, 0, day0.Add(2 * time.Hour), day0.Add(2 * time.Hour)},
		"3 left, whole in 5 m": {Window{Limit: 14400, Remaining: 3, Reset: 5 * time.Minute}, 3, day0.Add(5 * time.Minute), day0.Add(5 * time.Minute)},
		"no reset given":       {Window{Limit: 100, Remaining: 1, Reset: 0}, 1, midnight, midnight},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := NewDays(DaysOptions{})
			d.ObserveAt(day0, "k", time.UTC, DayObservation{Requests: tc.w, Tokens: Window{Limit: -1, Remaining: -1}})
			for i := range tc.admitted {
				if _, err := d.TakeAt(day0, "k", time.UTC, Cost{Requests: 1}); err != nil {
					t.Fatalf("take %d: %v", i, err)
				}
			}
			_, err := d.TakeAt(day0, "k", time.UTC, Cost{Requests: 1})
			wantDayLimit(t, err, DimRequests, float64(tc.w.Limit), tc.reset)
			if _, err := d.TakeAt(tc.wholeFrom, "k", time.UTC, Cost{Requests: 1}); err != nil {
				t.Fatalf("when whole: %v", err)
			}
		})
	}
}

// TestDaysExhaust: a provider's refusal for the day blocks the key until
// the given instant, or its zone's midnight; a later refusal with an
// earlier end does not shorten it.
func TestDaysExhaust(t *testing.T) {
	d := NewDays(DaysOptions{})
	d.ExhaustAt(day0, "g", la, time.Time{})
	pacific := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC) // midnight PST
	_, err := d.TakeAt(day0, "g", la, Cost{Requests: 1})
	wantDayLimit(t, err, DimNone, 0, pacific)
	if !strings.Contains(err.Error(), "the provider refused for the day") {
		t.Errorf("message %q", err)
	}
	d.ExhaustAt(day0, "g", la, day0.Add(time.Hour))
	wantDayLimit(t, d.CheckAt(day0.Add(2*time.Hour), "g", la, Cost{Requests: 1}), DimNone, 0, pacific)
	if err := d.CheckAt(pacific, "g", la, Cost{Requests: 1}); err != nil {
		t.Fatalf("at the reset: %v", err)
	}
}

// TestDaysUsageRestore: a rerun the same day carries on from the counts
// of the run before it, in the zone it named; a rerun the next day starts
// clean; a provider's refusal is not carried (the provider says it again).
func TestDaysUsageRestore(t *testing.T) {
	now := day0
	clock := func() time.Time { return now }
	run1 := NewDays(DaysOptions{Defaults: DayLimits{Requests: 5}, Now: clock})
	for range 3 {
		run1.Take("k", la, Cost{Requests: 1, Input: 7})
	}
	run1.Exhaust("g", time.UTC, day0.Add(3*time.Hour))
	pacific := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	u := run1.Usage()
	if len(u) != 1 || u[0].Key != "k" || u[0].Zone != "America/Los_Angeles" || u[0].Requests != 3 || u[0].Tokens != 21 || !u[0].Reset.Equal(pacific) {
		t.Fatalf("usage %+v", u)
	}

	now = day0.Add(time.Hour)
	run2 := NewDays(DaysOptions{Defaults: DayLimits{Requests: 5}, Now: clock})
	run2.Restore(u)
	for range 2 {
		if _, err := run2.Take("k", la, Cost{Requests: 1}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := run2.Take("k", la, Cost{Requests: 1})
	wantDayLimit(t, err, DimRequests, 5, pacific)
	if err := run2.Check("g", time.UTC, Cost{Requests: 1}); err != nil {
		t.Fatalf("a refusal was carried: %v", err)
	}

	now = pacific.Add(time.Hour)
	run3 := NewDays(DaysOptions{Defaults: DayLimits{Requests: 5}, Now: clock})
	run3.Restore(u)
	for range 5 {
		if _, err := run3.Take("k", la, Cost{Requests: 1}); err != nil {
			t.Fatalf("next day: %v", err)
		}
	}
}

// TestDaysStatsLowerLimitWins: the limit in force is the lower of the
// key's own and the provider's.
func TestDaysStatsLowerLimitWins(t *testing.T) {
	d := NewDays(DaysOptions{Defaults: DayLimits{Requests: 1000}, Now: func() time.Time { return day0 }})
	d.Observe("k", time.UTC, DayObservation{Requests: Window{Limit: 200, Remaining: 150, Reset: time.Hour}, Tokens: Window{Limit: -1, Remaining: -1}})
	if s := d.Stats(); len(s) != 1 || s[0].RPD != 200 || s[0].TPD != 0 {
		t.Fatalf("stats %+v", s)
	}
	if s := NewDays(DaysOptions{}).Stats(); len(s) != 0 {
		t.Fatalf("no limits, no stats: %+v", s)
	}
}

// TestDaysObserveTicket: a response's headers cannot know of the charges
// made after its request; they count on top of what the headers say
// remains, so the requests in flight do not overrun the day.
func TestDaysObserveTicket(t *testing.T) {
	d := NewDays(DaysOptions{Now: func() time.Time { return day0 }})
	win := func(remaining int64) DayObservation {
		return DayObservation{Requests: Window{Limit: 3, Remaining: remaining, Reset: time.Hour}, Tokens: Window{Limit: -1, Remaining: -1}}
	}
	d.Observe("k", time.UTC, win(3))
	a, _ := d.Take("k", time.UTC, Cost{Requests: 1})
	if _, err := d.Take("k", time.UTC, Cost{Requests: 1}); err != nil { // b, in flight
		t.Fatal(err)
	}
	d.ObserveTicket(a, time.UTC, win(2)) // a's answer: 2 left, b unseen
	if _, err := d.Take("k", time.UTC, Cost{Requests: 1}); err != nil {
		t.Fatalf("the third: %v", err)
	}
	_, err := d.Take("k", time.UTC, Cost{Requests: 1})
	wantDayLimit(t, err, DimRequests, 3, day0.Add(time.Hour))
	d.Observe("k", time.UTC, win(2)) // without the ticket: b and the third forgotten
	if _, err := d.Take("k", time.UTC, Cost{Requests: 1}); err != nil {
		t.Fatalf("a bare observation forgets what is in flight: %v", err)
	}
}
