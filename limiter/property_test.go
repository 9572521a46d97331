package limiter

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestPropertyWindowBound drives a key with seeded random request streams
// on a simulated clock (the explicit-time core, as Reserve uses it: one FIFO
// head, completions settling at random latencies) and checks, for every
// bucket and every window [t_j, t_k] between two events:
//
//	charged load in the window ≤ rate × (t_k − t_j) + capacity
//
// where charged load is what admissions took minus what settlements
// refunded, and capacity is max(rate × burst, the largest single cost) —
// a request larger than the burst accrues its full size at the head of the
// queue. With refunds off (every attempt settles exactly its reservation)
// charged load is simply the admitted load. Settlements here never exceed
// the reservation; an under-reservation charged afterwards can exceed the
// bound by that charge, and then delays later admissions by as much.
func TestPropertyWindowBound(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 0x11ab))
		refunds := seed%2 == 1
		lim := Limits{
			RPM:         float64(30 + rng.IntN(600)),
			ITPM:        float64(2000 + rng.IntN(100000)),
			Burst:       []time.Duration{250 * time.Millisecond, time.Second, 3 * time.Second}[rng.IntN(3)],
			Headroom:    []float64{1, 0.9, 0.5}[rng.IntN(3)],
			Concurrency: rng.IntN(10), // 0 = unlimited
		}
		if rng.IntN(2) == 0 {
			lim.OTPM = float64(1000 + rng.IntN(50000))
		}
		if rng.IntN(2) == 0 {
			lim.TPM = float64(5000 + rng.IntN(150000))
		}
		simulate(t, seed, lim, refunds, rng)
	}
}

type simEvent struct {
	at  time.Time
	amt [numBuckets]float64
}

type simFlight struct {
	end         time.Time
	seq         uint64
	mask        uint8
	cost, final Cost
	ok          bool
}

func simulate(t *testing.T, seed uint64, lim Limits, refunds bool, rng *rand.Rand) {
	t.Helper()
	k := newKey(lim)
	const n = 300
	// Requests arrive faster than the limits allow, in bursts and lulls.
	type req struct {
		arrive time.Time
		cost   Cost
	}
	reqs := make([]req, n)
	var biggest [numBuckets]float64
	at := t0
	maxIn := int64(min(k.b[1].max, 4*k.b[1].cap+1))
	maxOut := int64(2000)
	if k.b[2].on() {
		maxOut = int64(min(k.b[2].max, 4*k.b[2].cap+1))
	}
	if k.b[3].on() {
		maxIn = min(maxIn, int64(k.b[3].max)/2)
		maxOut = min(maxOut, int64(k.b[3].max)/2)
	}
	for i := range reqs {
		at = at.Add(time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond)))
		if rng.IntN(50) == 0 {
			at = at.Add(time.Duration(rng.IntN(10)) * time.Second) // a lull: buckets refill to the cap
		}
		c := Cost{Requests: 1, Input: 1 + rng.Int64N(maxIn), Output: 1 + rng.Int64N(maxOut)}
		if err := k.tooLarge(c); err != nil {
			t.Fatalf("seed %d: generator made a too-large cost: %v", seed, err)
		}
		reqs[i] = req{at, c}
		for b := range numBuckets {
			biggest[b] = max(biggest[b], c.Amount(b))
		}
	}

	var events []simEvent
	var flights []simFlight
	finish := func(now time.Time) {
		f := flights[0]
		flights = flights[1:]
		k.finishAt(now, f.mask, f.seq, f.cost, f.final, f.ok)
		var e simEvent
		e.at = now
		for b := range numBuckets {
			e.amt[b] = -(f.cost.Amount(b) - f.final.Amount(b))
		}
		e.amt[0] = 0 // the request charge is kept
		events = append(events, e)
	}
	now := t0
	queued := false
	bucketWaits := 0
	for i := 0; i < n; {
		r := reqs[i]
		nextEnd := time.Time{}
		if len(flights) > 0 {
			nextEnd = flights[0].end
		}
		if !queued {
			arrive := r.arrive
			if arrive.Before(now) {
				arrive = now // it queued while earlier ones waited
			}
			if len(flights) > 0 && !nextEnd.After(arrive) {
				now = nextEnd
				finish(now)
				continue
			}
			now = arrive
			k.syncAt(now)
			k.q = []*waiter{{cost: r.cost, arrived: now}}
			queued = true
		}
		wait, dim := k.reserveAt(now, r.cost)
		if dim == DimNone {
			k.popHead(now)
			queued = false
			if c := k.conf.Concurrency; c > 0 && k.inflight > c {
				t.Fatalf("seed %d: %d in flight > concurrency %d", seed, k.inflight, c)
			}
			var e simEvent
			e.at = now
			for b := range numBuckets {
				e.amt[b] = r.cost.Amount(b)
			}
			events = append(events, e)
			f := simFlight{end: now.Add(50*time.Millisecond + time.Duration(rng.Int64N(int64(3*time.Second)))), seq: k.seq, mask: k.charged(), cost: r.cost, final: r.cost, ok: true}
			if refunds {
				switch rng.IntN(10) {
				case 0:
					f.final, f.ok = Cost{}, false // Fail
				default:
					f.final = Cost{Requests: 1, Input: rng.Int64N(r.cost.Input + 1), Output: rng.Int64N(r.cost.Output + 1)}
				}
			}
			j, _ := slices.BinarySearchFunc(flights, f.end, func(a simFlight, t time.Time) int { return a.end.Compare(t) })
			flights = slices.Insert(flights, j, f)
			i++
			continue
		}
		if dim >= DimRequests && dim <= DimTokens {
			bucketWaits++
		}
		wake := now.Add(wait)
		if dim == DimConcurrency {
			if len(flights) == 0 {
				t.Fatalf("seed %d: blocked on concurrency with nothing in flight", seed)
			}
			wake = nextEnd
		}
		if len(flights) > 0 && !nextEnd.After(wake) {
			now = nextEnd
			finish(now)
			continue
		}
		now = wake
	}
	for len(flights) > 0 {
		now = flights[0].end
		finish(now)
	}

	for b := range numBuckets {
		bk := k.b[b]
		if !bk.on() {
			continue
		}
		capacity := max(bk.cap, biggest[b])
		prefix := make([]float64, len(events)+1)
		for i, e := range events {
			prefix[i+1] = prefix[i] + e.amt[b]
		}
		// For each start j, the worst end l ≥ j maximises
		// prefix[l+1] − rate·t_l: a suffix maximum makes this O(events).
		secs := func(i int) float64 { return events[i].at.Sub(t0).Seconds() }
		best, arg := math.Inf(-1), -1
		for j := len(events) - 1; j >= 0; j-- {
			if v := prefix[j+1] - bk.rate*secs(j); v > best {
				best, arg = v, j
			}
			load := prefix[arg+1] - prefix[j]
			bound := bk.rate*(secs(arg)-secs(j)) + capacity
			if load > bound+1e-6*max(1, bound) {
				t.Fatalf("seed %d (%+v, refunds %v): %v load %.3f in [%v, %v] exceeds rate×W + capacity = %.3f",
					seed, lim, refunds, Dimension(b+1), load, events[j].at.Sub(t0), events[arg].at.Sub(t0), bound)
			}
		}
	}
	// The streams must actually have pushed against the buckets, or the
	// property says nothing.
	if bucketWaits < n/10 {
		t.Fatalf("seed %d: only %d of %d admissions waited on a bucket", seed, bucketWaits, n)
	}
	if k.reservations != n {
		t.Fatalf("seed %d: %d reservations", seed, k.reservations)
	}
}
