package mock

import (
	"math"
	"time"
)

// bucket is a continuously refilling token bucket. Its level may go
// negative: admitted requests are charged their actual output when they
// finish, whatever is left. The zero value is not usable; see newBucket.
type bucket struct {
	perMinute float64 // the configured limit, for headers
	rate      float64 // refill per second
	capacity  float64
	level     float64
	last      time.Time
	started   bool
}

// newBucket returns a full bucket for a per-minute limit, or nil when the
// limit is 0 (unlimited).
func newBucket(perMinute float64, burst time.Duration) *bucket {
	if perMinute <= 0 {
		return nil
	}
	rate := perMinute / 60
	return &bucket{perMinute: perMinute, rate: rate, capacity: rate * burst.Seconds()}
}

// advance refills b up to now. A clock that goes backwards refills nothing.
func (b *bucket) advance(now time.Time) {
	if !b.started {
		b.started, b.level, b.last = true, b.capacity, now
		return
	}
	if now.After(b.last) {
		b.level = math.Min(b.capacity, b.level+b.rate*now.Sub(b.last).Seconds())
		b.last = now
	}
}

// need is what the bucket must hold to admit a request of n units: n, but
// never more than the capacity, so a request larger than the bucket is
// admitted once the bucket is full instead of never (it then drives the
// level negative, which delays the following requests accordingly).
func (b *bucket) need(n float64) float64 { return math.Min(n, b.capacity) }

// covers reports whether the bucket holds n units (see need).
func (b *bucket) covers(n float64) bool { return b.level+1e-9 >= b.need(n) }

// waitFor is the time until the bucket covers n units, 0 if it does now.
func (b *bucket) waitFor(n float64) time.Duration {
	deficit := b.need(n) - b.level
	if deficit <= 1e-9 {
		return 0
	}
	return seconds(deficit / b.rate)
}

// waitPositive is the time until the level is above zero, 0 if it is now.
func (b *bucket) waitPositive() time.Duration {
	if b.level > 0 {
		return 0
	}
	return seconds(-b.level/b.rate) + time.Millisecond
}

// window describes the bucket for rate-limit headers.
func (b *bucket) window() window {
	if b == nil {
		return window{}
	}
	return window{
		set:       true,
		limit:     b.perMinute,
		remaining: int64(math.Floor(math.Max(0, b.level))),
		reset:     seconds(math.Max(0, b.capacity-b.level) / b.rate),
	}
}

func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// window is one limited dimension as the rate-limit headers report it:
// limit is the configured per-minute figure, remaining what the bucket
// holds now (floored, never negative), reset the time until it is full.
type window struct {
	set       bool
	limit     float64
	remaining int64
	reset     time.Duration
}

// limitState is the rate-limit header view of the server at one instant.
type limitState struct {
	requests, input, output window
}

// concurrencyRetry is the retry hint for a request refused because the
// server is at its concurrency limit (nobody knows when a slot frees up).
const concurrencyRetry = 100 * time.Millisecond

// refusal is why a request was not admitted.
type refusal struct {
	// dim is the dimension that decided the wait: "concurrency",
	// "requests", "input" or "output".
	dim   string
	wait  time.Duration
	limit float64 // the per-minute limit (or concurrency) of dim
}

// admit decides whether a request of inTokens input tokens may start at
// now. Admitted requests take one request and their input tokens and count
// as in flight; refused ones still take their request charge, and the
// refusal's wait is computed after that charge. admit requires s.mu held.
func (s *Server) admit(now time.Time, inTokens int) *refusal {
	for _, b := range []*bucket{s.reqs, s.in, s.out} {
		if b != nil {
			b.advance(now)
		}
	}
	in := float64(inTokens)
	var ref *refusal
	switch {
	case s.cfg.Concurrency > 0 && s.inFlight >= int64(s.cfg.Concurrency):
		ref = &refusal{dim: "concurrency", limit: float64(s.cfg.Concurrency)}
	case s.reqs != nil && !s.reqs.covers(1):
		ref = &refusal{dim: "requests", limit: s.reqs.perMinute}
	case s.in != nil && !s.in.covers(in):
		ref = &refusal{dim: "input", limit: s.in.perMinute}
	case s.out != nil && s.out.level <= 0:
		ref = &refusal{dim: "output", limit: s.out.perMinute}
	}
	if s.reqs != nil {
		s.reqs.level--
	}
	if ref == nil {
		if s.in != nil {
			s.in.level -= in
		}
		s.inFlight++
		s.stats.InFlight = s.inFlight
		s.stats.MaxInFlight = max(s.stats.MaxInFlight, s.inFlight)
		s.stats.InputTokens += int64(inTokens)
		return nil
	}
	// The hint is the time until every bucket covers the request, so a
	// client that obeys it (and is alone) is admitted on its next try.
	var wait time.Duration
	if ref.dim == "concurrency" {
		wait = concurrencyRetry
	}
	if s.reqs != nil {
		if d := s.reqs.waitFor(1); d > wait {
			wait, ref.dim, ref.limit = d, "requests", s.reqs.perMinute
		}
	}
	if s.in != nil {
		if d := s.in.waitFor(in); d > wait {
			wait, ref.dim, ref.limit = d, "input", s.in.perMinute
		}
	}
	if s.out != nil {
		if d := s.out.waitPositive(); d > wait {
			wait, ref.dim, ref.limit = d, "output", s.out.perMinute
		}
	}
	ref.wait = wait
	s.stats.RateLimited++
	return ref
}

// limitsAt returns the header view of the buckets at now. It requires s.mu
// held.
func (s *Server) limitsAt(now time.Time) limitState {
	for _, b := range []*bucket{s.reqs, s.in, s.out} {
		if b != nil {
			b.advance(now)
		}
	}
	return limitState{requests: s.reqs.window(), input: s.in.window(), output: s.out.window()}
}
