// Package redisbudget is a limiter.Budget kept in Redis, so that several
// llmrun processes, on several machines, running against the same provider
// account share one budget.
//
// It has the semantics of the in-process *limiter.Limiter wherever they
// make sense across processes: per key, continuously refilled buckets for
// requests, input, output and combined tokens (capacity = rate × Burst,
// never below the largest single cost; Headroom; the Skew margin), an
// all-or-nothing multi-bucket take, reconciliation on Settle, Fail and
// Cancel, a shared pause, rate-limit headers that only ever lower the
// buckets, and a concurrency limit. The same limiter.Limits configures it.
//
// Every decision is one Lua script run atomically by Redis against Redis's
// own clock (TIME), so the machines' clocks do not matter: a process only
// ever sends durations. A key's data lives under llmrun:{key}:… (the hash
// tag keeps it in one Redis Cluster slot).
//
// Differences from the in-process limiter:
//
//   - Fairness is best effort. Within one process, Reserve calls of a key
//     queue first come, first served and only the head asks Redis; across
//     processes, the heads race: when the buckets refill, whichever head
//     asks first is admitted, and a large request can be overtaken by
//     smaller ones from other processes. Waits are polled (the script says
//     how long until every bucket covers the cost; concurrency is polled
//     every PollInterval), with a little jitter so heads do not ask in
//     lockstep.
//   - No Auto mode: limits must be explicit numbers. New and SetLimits
//     refuse Limits.Auto with no numbers; with numbers, Auto is ignored.
//     Nor are rates learned from 429s (limiter.AIMD): a refused ticket
//     pauses the key for the server's hint or a backoff, in every
//     process, and that is all. Sharing learned rates needs the AIMD's
//     measurement taken from the key's cumulative charges (every
//     process's admissions) and its rates stored on the key.
//   - Concurrency is a per-key set of in-flight tickets with leases: a live
//     process renews its tickets' leases every Lease/3, so the slots of a
//     process that crashed (or called Close) free themselves after Lease,
//     or at once when a process restarts in the same Holder role.
//   - Stats are this process's: its waits, reservations, in-flight tickets
//     and 429s, not the other processes'.
//   - Budget.Observe (headers without a ticket) subtracts only this
//     process's in-flight charges; Ticket.Observe, which the runner uses,
//     subtracts everything charged to the key after the ticket, by any
//     process.
//   - Settle, Fail, Cancel, Observe, Pause and RateLimited cannot return
//     errors: a Redis failure there goes to Options.OnError. A lost Settle
//     leaves the reservation charged (the safe side); its slot expires
//     with the lease.
//
// Every process sharing a key must configure the same limits: the
// parameters travel with each call, the levels live in Redis.
//
// Redis keys, per budget key K (Prefix "llmrun" by default): K's state
// hash llmrun:{K}:state (levels, largest costs, cumulative charges; it
// expires StateTTL after the buckets would have refilled), the in-flight
// set llmrun:{K}:inflight (ticket ids scored by lease expiry) and the pause
// llmrun:{K}:pause (expiring with the pause). It needs Redis 5 or later
// (scripts that read TIME and then write), standalone, Sentinel or Cluster.
package redisbudget

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/redis/go-redis/v9"
)

// Defaults for Options.
const (
	DefaultPrefix       = "llmrun"
	DefaultLease        = 30 * time.Second
	DefaultMaxWait      = time.Second
	DefaultPollInterval = 50 * time.Millisecond
	DefaultOpTimeout    = 5 * time.Second
	// DefaultStateTTL is how long a key's state outlives the time its
	// buckets take to refill completely.
	DefaultStateTTL = time.Hour
)

// Options configures a Budget. Client is required; every other zero field
// takes its default.
type Options struct {
	// Client is the Redis connection (a *redis.Client, *redis.ClusterClient
	// or failover client). The Budget does not close it.
	Client redis.UniversalClient
	// Defaults is applied to every key unless SetLimits overrides it.
	Defaults limiter.Limits
	// Prefix starts every Redis key (DefaultPrefix).
	Prefix string
	// Lease is how long a concurrency slot outlives a process that stops
	// renewing it (DefaultLease).
	Lease time.Duration
	// MaxWait caps one sleep between two attempts to reserve, so a pause
	// shortened or limits changed elsewhere are noticed (DefaultMaxWait).
	MaxWait time.Duration
	// PollInterval is how often a Reserve blocked by the concurrency limit
	// asks again (DefaultPollInterval).
	PollInterval time.Duration
	// OpTimeout bounds each Redis call made without a caller's context, and
	// each reservation script (DefaultOpTimeout).
	OpTimeout time.Duration
	// StateTTL is how long a key's state outlives a full refill
	// (DefaultStateTTL).
	StateTTL time.Duration
	// Rand draws the jitter added to waits; nil seeds one from crypto/rand.
	// The Budget serialises its use.
	Rand *rand.Rand
	// OnError receives the errors of calls that cannot return one (Settle,
	// Fail, Cancel, Observe, Pause, lease renewal); nil drops them.
	OnError func(error)
	// MaxPause is the longest key-wide pause one hint may set
	// (limiter.DefaultMaxPause when zero); longer hints are cut to it,
	// counted (KeyStats.PauseClamped) and reported to Warn.
	MaxPause time.Duration
	// Warn receives one line per event worth telling the user; nil drops
	// them.
	Warn func(msg string)
	// Holder names this process in its tickets so that a restart in the
	// same role frees the dead process's concurrency slots at once (see
	// Holder); the zero Holder leaves them to expire after Lease.
	Holder Holder
}

// ErrAutoLimits is returned by New and SetLimits for Limits in Auto mode
// with no explicit numbers: a Redis budget does not learn limits.
var ErrAutoLimits = errors.New("redisbudget: limits must be explicit numbers (auto mode is in-process only)")

// Budget is a limiter.Budget kept in Redis. It is safe for concurrent use.
// Call Close when done, to stop renewing leases.
type Budget struct {
	o        Options
	client   redis.UniversalClient
	now      func() time.Time
	newTimer func(time.Duration) (<-chan time.Time, func() bool)
	holder   holderID // prefix of this process's ticket ids
	alive    func(pid int) bool

	mu   sync.Mutex // guards rand, seq, keys
	rand *rand.Rand
	seq  uint64
	keys map[string]*keyState

	stop      chan struct{}
	closeOnce sync.Once
	renewed   sync.WaitGroup
}

var _ limiter.Budget = (*Budget)(nil)

// New returns a Budget configured by o and starts its lease renewer.
func New(o Options) (*Budget, error) {
	if o.Client == nil {
		return nil, errors.New("redisbudget: Options.Client is nil")
	}
	if err := checkLimits(o.Defaults); err != nil {
		return nil, err
	}
	o.Prefix = cmp.Or(o.Prefix, DefaultPrefix)
	o.Lease = positive(o.Lease, DefaultLease)
	o.MaxWait = positive(o.MaxWait, DefaultMaxWait)
	o.PollInterval = positive(o.PollInterval, DefaultPollInterval)
	o.OpTimeout = positive(o.OpTimeout, DefaultOpTimeout)
	o.StateTTL = positive(o.StateTTL, DefaultStateTTL)
	o.MaxPause = positive(o.MaxPause, limiter.DefaultMaxPause)
	b := &Budget{
		o:      o,
		client: o.Client,
		holder: newHolderID(o.Holder, crand.Text()[:16]),
		alive:  o.Holder.Alive,
		rand:   o.Rand,
		keys:   map[string]*keyState{},
		stop:   make(chan struct{}),
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.alive == nil {
		b.alive = processAlive
	}
	if b.newTimer == nil {
		b.newTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}
	}
	if b.rand == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		b.rand = rand.New(rand.NewPCG(leUint64(seed[:8]), leUint64(seed[8:])))
	}
	b.renewed.Add(1)
	go b.renewLoop()
	return b, nil
}

// Close stops renewing leases. Tickets still in flight are abandoned: their
// concurrency slots free themselves after Lease. It does not close the
// Redis client. Close is idempotent.
func (b *Budget) Close() error {
	b.closeOnce.Do(func() { close(b.stop) })
	b.renewed.Wait()
	return nil
}

// SetLimits configures key, replacing the defaults for it in this process.
// Every process sharing the key should set the same limits.
func (b *Budget) SetLimits(key string, lim limiter.Limits) error {
	if err := checkLimits(lim); err != nil {
		return err
	}
	k := b.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setLimits(lim)
	k.wakeHead()
	return nil
}

// checkLimits refuses Auto mode without numbers.
func checkLimits(lim limiter.Limits) error {
	if lim.Auto && lim.RPM <= 0 && lim.ITPM <= 0 && lim.OTPM <= 0 && lim.TPM <= 0 {
		return ErrAutoLimits
	}
	return nil
}

func (b *Budget) key(name string) *keyState {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.keys[name]
	if !ok {
		k = newKeyState(name, b.o.Prefix, b.o.Defaults, b.now())
		b.keys[name] = k
	}
	return k
}

// jitter returns d plus up to a tenth of it (at least 1ms, at most 10ms),
// so the heads of several processes do not ask Redis in lockstep.
func (b *Budget) jitter(d time.Duration) time.Duration {
	j := min(max(d/10, time.Millisecond), 10*time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	return d + time.Duration(b.rand.Int64N(int64(j)))
}

// ticketID returns an id unique across processes.
func (b *Budget) ticketID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	return b.holder.String() + ":" + strconv.FormatUint(b.seq, 36)
}

func (b *Budget) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.o.OpTimeout)
}

func (b *Budget) report(err error) {
	if err != nil && b.o.OnError != nil {
		b.o.OnError(err)
	}
}

// Reserve blocks until key is not paused, has a free concurrency slot and
// every bucket covers c, then takes c from every bucket at once and returns
// the ticket. Calls of one process are served first come, first served;
// across processes fairness is best effort (see the package comment). A
// cost larger than a bucket's per-minute limit fails at once with a
// *limiter.TooLargeError. If ctx ends first, Reserve returns ctx.Err() and
// the buckets are untouched; a Redis error is returned wrapped.
func (b *Budget) Reserve(ctx context.Context, key string, c limiter.Cost) (limiter.Ticket, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.Requests < 0 || c.Input < 0 || c.Output < 0 {
		return nil, fmt.Errorf("redisbudget: negative cost %+v", c)
	}
	k := b.key(key)
	k.mu.Lock()
	err := k.p.tooLarge(key, c)
	k.mu.Unlock()
	if err != nil {
		return nil, err
	}

	arrived := b.now()
	k.mu.Lock()
	k.enqueue(arrived)
	k.mu.Unlock()
	leave := func() {
		k.mu.Lock()
		k.dequeue(b.now(), arrived)
		k.mu.Unlock()
	}

	select { // the local FIFO: only the head asks Redis
	case k.turn <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	defer func() { <-k.turn }()

	k.mu.Lock()
	first := !k.reclaimed
	k.mu.Unlock()
	if first {
		if _, err := b.reclaim(ctx, k); err != nil {
			leave()
			return nil, err
		}
		k.mu.Lock()
		k.reclaimed = true
		k.mu.Unlock()
	}

	for {
		if err := ctx.Err(); err != nil {
			leave()
			return nil, err
		}
		k.mu.Lock()
		p := k.p
		k.mu.Unlock()
		if err := p.tooLarge(key, c); err != nil { // limits may have changed
			leave()
			return nil, err
		}
		t, wait, dim, err := b.try(ctx, k, p, c)
		if err != nil {
			leave()
			return nil, err
		}
		now := b.now()
		if t != nil {
			k.mu.Lock()
			k.dequeue(now, arrived)
			k.mu.Unlock()
			if err := ctx.Err(); err != nil { // admitted too late: give it back
				t.Cancel()
				return nil, err
			}
			return t, nil
		}
		k.mu.Lock()
		k.block(now, dim, wait)
		k.mu.Unlock()
		if dim == limiter.DimConcurrency {
			wait = b.o.PollInterval
		}
		fire, stop := b.newTimer(b.jitter(min(wait, b.o.MaxWait)))
		select {
		case <-ctx.Done():
		case <-fire:
		case <-k.wake:
		}
		stop()
	}
}

// ReservePriority is Reserve; priorities are not yet ordered across
// processes.
func (b *Budget) ReservePriority(ctx context.Context, key string, c limiter.Cost, _ int) (limiter.Ticket, error) {
	return b.Reserve(ctx, key, c)
}

// try runs the reservation script once: it returns the ticket, or how long
// to wait and for what. The script runs even if ctx ends meanwhile (an
// admission whose answer was lost would leak its charge); Reserve cancels a
// ticket admitted too late.
func (b *Budget) try(ctx context.Context, k *keyState, p params, c limiter.Cost) (*ticket, time.Duration, limiter.Dimension, error) {
	id := b.ticketID()
	args := make([]any, 0, 5+4*numBuckets)
	args = append(args, id, micros(b.o.Lease), p.conc, p.skew, b.o.StateTTL.Milliseconds())
	for i := range numBuckets {
		args = append(args, p.rate[i], p.base[i], p.max[i], c.Amount(i))
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.o.OpTimeout)
	defer cancel()
	res, err := reserveScript.Run(rctx, b.client, k.redisKeys[:], args...).Slice()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("redisbudget: reserve %q: %w", k.name, err)
	}
	if len(res) < 3 {
		return nil, 0, 0, fmt.Errorf("redisbudget: reserve %q: unexpected reply %v", k.name, res)
	}
	if ok, _ := res[0].(int64); ok != 1 {
		w, _ := res[1].(int64)
		d, _ := res[2].(int64)
		return nil, time.Duration(w) * time.Microsecond, limiter.Dimension(d), nil
	}
	if len(res) != 1+numBuckets {
		return nil, 0, 0, fmt.Errorf("redisbudget: reserve %q: unexpected reply %v", k.name, res)
	}
	t := &ticket{b: b, k: k, id: id, cost: c, mask: p.mask()}
	for i := range numBuckets {
		s, _ := res[1+i].(string)
		if t.after[i], err = strconv.ParseFloat(s, 64); err != nil {
			return nil, 0, 0, fmt.Errorf("redisbudget: reserve %q: unexpected reply %v", k.name, res)
		}
	}
	k.mu.Lock()
	k.admit(t)
	k.mu.Unlock()
	return t, 0, limiter.DimNone, nil
}

// Observe applies rate-limit headers that belong to no ticket: it lowers
// each bucket to what o says remained minus this process's in-flight
// charges (never raising it). Prefer Ticket.Observe, which subtracts what
// every process admitted after the observed request.
func (b *Budget) Observe(key string, o limiter.Observation) {
	k := b.key(key)
	k.mu.Lock()
	p, unseen := k.p, k.out
	k.mu.Unlock()
	b.observe(k, p, o, 0, 'p', unseen)
}

// observe runs the observe script; mode 't' takes arg as the ticket's
// cumulative-charge snapshot, 'p' as the unseen charge itself.
func (b *Budget) observe(k *keyState, p params, o limiter.Observation, age time.Duration, mode byte, arg [numBuckets]float64) {
	ws := [numBuckets]limiter.Window{o.Requests, o.Input, o.Output, o.Tokens}
	if known(o.Input) || known(o.Output) {
		// Separate input and output limits: the combined window only
		// restates the most restrictive of them (as in package limiter).
		ws[3] = limiter.Window{}
	}
	args := make([]any, 0, 3+5*numBuckets)
	args = append(args, max(age, 0).Seconds(), string(mode), b.o.StateTTL.Milliseconds())
	some := false
	for i, w := range ws {
		rem := int64(-1)
		if w != (limiter.Window{}) && w.Remaining >= 0 && p.rate[i] > 0 {
			rem, some = w.Remaining, true
		}
		args = append(args, p.rate[i], p.base[i], p.max[i], rem, arg[i])
	}
	if !some {
		return
	}
	ctx, cancel := b.opContext()
	defer cancel()
	if err := observeScript.Run(ctx, b.client, k.redisKeys[:1], args...).Err(); err != nil {
		b.report(fmt.Errorf("redisbudget: observe %q: %w", k.name, err))
	}
}

// known reports whether a header said anything about w.
func known(w limiter.Window) bool {
	return w != (limiter.Window{}) && (w.Limit >= 0 || w.Remaining >= 0)
}

// Pause stops all admissions for key, in every process, until the given
// instant (a 429 with retry-after), but for at most MaxPause: a longer hint
// is cut to it, counted and reported to Warn when it starts a pause. An
// earlier pause never shortens a later one. The instant is
// turned into a duration from this process's clock, so the clocks of other
// machines do not matter.
func (b *Budget) Pause(key string, until time.Time) {
	k := b.key(key)
	now := b.now()
	asked := until.Sub(now)
	if asked <= 0 {
		return
	}
	d := min(asked, b.o.MaxPause)
	k.mu.Lock()
	if d < asked {
		k.pauseClamped++
	}
	if until := now.Add(d); until.After(k.paused) {
		k.paused = until
	}
	k.mu.Unlock()
	ctx, cancel := b.opContext()
	defer cancel()
	before, err := pauseScript.Run(ctx, b.client, k.redisKeys[2:3], micros(d)).Int64()
	if err != nil {
		b.report(fmt.Errorf("redisbudget: pause %q: %w", k.name, err))
		return
	}
	// Told when it starts a pause: the 429s of one congestion tell once.
	if d < asked && before == 0 && b.o.Warn != nil {
		b.o.Warn(limiter.PauseClampedMessage(key, asked, b.o.MaxPause))
	}
}

// RateLimited counts a 429 for key (in this process's Stats). There is no
// Auto mode to adjust.
func (b *Budget) RateLimited(key string) {
	k := b.key(key)
	k.mu.Lock()
	k.rateLimited++
	k.mu.Unlock()
}

// Stats returns a snapshot of every key this process used, sorted by key:
// the configured limits (Effective is the same: nothing is learned) and
// this process's waits, binding dimension, in-flight tickets,
// reservations and 429s. PausedUntil is the latest pause this process set
// or ran into.
func (b *Budget) Stats() []limiter.KeyStats {
	now := b.now()
	b.mu.Lock()
	ks := make([]*keyState, 0, len(b.keys))
	for _, k := range b.keys {
		ks = append(ks, k)
	}
	b.mu.Unlock()
	out := make([]limiter.KeyStats, 0, len(ks))
	for _, k := range ks {
		k.mu.Lock()
		out = append(out, k.stats(now))
		k.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b limiter.KeyStats) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// renewLoop renews the leases of this process's in-flight tickets every
// Lease/3 until Close.
func (b *Budget) renewLoop() {
	defer b.renewed.Done()
	tick := time.NewTicker(b.o.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
		b.mu.Lock()
		ks := make([]*keyState, 0, len(b.keys))
		for _, k := range b.keys {
			ks = append(ks, k)
		}
		b.mu.Unlock()
		for _, k := range ks {
			k.mu.Lock()
			if k.p.conc == 0 { // no lease to renew
				k.mu.Unlock()
				continue
			}
			ids := make([]any, 0, 1+len(k.inflight))
			ids = append(ids, micros(b.o.Lease))
			for id := range k.inflight {
				ids = append(ids, id)
			}
			k.mu.Unlock()
			if len(ids) == 1 {
				continue
			}
			ctx, cancel := b.opContext()
			err := renewScript.Run(ctx, b.client, k.redisKeys[1:2], ids...).Err()
			cancel()
			if err != nil {
				b.report(fmt.Errorf("redisbudget: renew leases of %q: %w", k.name, err))
			}
		}
	}
}

// micros converts d to whole microseconds, rounding up.
func micros(d time.Duration) int64 {
	return int64(math.Ceil(float64(d) / float64(time.Microsecond)))
}

func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}
