package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// One attempt's life as the runner drives it (Anthropic-style reservation:
// input estimate against ITPM, expected output against OTPM).
func Example() {
	ctx := context.Background()
	l := limiter.New(limiter.Options{Defaults: limiter.Limits{RPM: 50, ITPM: 30000, OTPM: 8000, Headroom: 0.95}})
	const key = "anthropic|https://api.anthropic.com|claude-sonnet-4-5"

	// The caller estimates the cost (package estimate: the input from the
	// prompt text, the expected output); the limiter sees only numbers.
	in, out := int64(15), int64(1024)
	r, err := l.Reserve(ctx, key, limiter.Cost{Requests: 1, Input: in, Output: out})
	if err != nil {
		fmt.Println(err) // ctx ended, or limiter.ErrTooLarge: fail the request, do not retry
		return
	}

	// … send; suppose the response reports usage and rate-limit headers …
	usedIn, usedOut := int64(18), int64(40)
	l.Observe(key, limiter.Observation{
		Requests: limiter.Window{Limit: 50, Remaining: 49, Reset: time.Second},
		Input:    limiter.Window{Limit: 30000, Remaining: 29000},
		Output:   limiter.Window{Limit: -1, Remaining: -1},
		Tokens:   limiter.Window{Limit: -1, Remaining: -1},
	})
	r.Settle(limiter.Cost{Requests: 1, Input: usedIn, Output: usedOut})

	// A 429 instead would be: r.Refused(limiter.Refusal{RetryAfter: d, HasRetryAfter: true}),
	// which keeps the request charge, pauses the whole key for the hint and,
	// where no headers describe the key, cuts the rates learned from 429s.
	s := l.Stats()[0]
	fmt.Println(s.Key, s.Reservations, s.InFlight, s.Binding)
	// Output: anthropic|https://api.anthropic.com|claude-sonnet-4-5 1 0 none
}
