package limiter

import (
	"math"
	"time"
)

// numBuckets is the number of token buckets a key may have: requests, input
// tokens, output tokens and combined tokens, in that order. Bucket i binds as
// Dimension(i+1).
const numBuckets = NumBuckets

// eps absorbs float rounding when comparing a bucket's level with a cost, so
// a waiter woken by a timer computed from the same numbers is admitted
// instead of sleeping again for a nanosecond.
const eps = 1e-6

// bucket is one continuously refilled budget. The zero value is "no bucket":
// it never binds and charges nothing.
type bucket struct {
	rate  float64 // refill per second, headroom applied; 0 = no bucket
	cap   float64 // rate × burst: how much it may hold when nobody waits
	max   float64 // largest admissible single cost (the per-minute limit); above it Reserve fails with ErrTooLarge
	level float64 // may be negative after an under-reservation is charged
	paced bool    // a guessed rate (an AIMD ramp): admits without a skew margin
}

func (b *bucket) on() bool { return b.rate > 0 }

// NumBuckets is how many buckets a key has (see Cost.Amount).
const NumBuckets = 4

// Amount is what c takes from bucket i (0 requests, 1 input, 2 output,
// 3 combined tokens; bucket i binds as Dimension(i+1)).
func (c Cost) Amount(i int) float64 {
	switch i {
	case 0:
		return float64(c.Requests)
	case 1:
		return float64(c.Input)
	case 2:
		return float64(c.Output)
	default:
		return float64(c.Input + c.Output)
	}
}

// PerMinute is lim's per-minute limit for bucket i (see Cost.Amount).
func (lim Limits) PerMinute(i int) float64 {
	switch i {
	case 0:
		return lim.RPM
	case 1:
		return lim.ITPM
	case 2:
		return lim.OTPM
	default:
		return lim.TPM
	}
}

func (lim *Limits) setPerMinute(i int, v float64) {
	switch i {
	case 0:
		lim.RPM = v
	case 1:
		lim.ITPM = v
	case 2:
		lim.OTPM = v
	default:
		lim.TPM = v
	}
}

// durationOf converts seconds to a Duration, rounding up so that a timer set
// to it never fires before the bucket covers the cost.
func durationOf(sec float64) time.Duration {
	if sec <= 0 {
		return 0
	}
	ns := math.Ceil(sec * 1e9)
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}
