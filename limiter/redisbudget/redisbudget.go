// Package redisbudget is a limiter.Budget kept in Redis, so that several
// llmrun processes, on several machines, running against the same provider
// account share one budget.
//
// It has the semantics of the in-process *limiter.Limiter wherever they
// make sense across processes: per key, continuously refilled buckets for
// requests, input, output and combined tokens (capacity = rate × Burst,
// never below the largest single cost; Headroom; the Skew margin), an
// all-or-nothing multi-bucket take, reconciliation on Settle, Fail and
// Cancel, a shared pause set by Refused (a 429's hint, or the AIMD's
// backoff without one; an overload's hint; at most MaxPause), rate-limit
// headers that only ever lower the buckets, a concurrency limit,
// priorities with aging, in Auto mode limits learned from rate-limit
// headers, where no headers describe a key the rates learned from 429s,
// and where limits are known a 429 that empties the bucket it names and
// cuts no rate. The same limiter.Limits configures it.
//
// Every decision is one Lua script run atomically by Redis against Redis's
// own clock (TIME), so the machines' clocks do not matter: a process only
// ever sends durations. A key's data lives under llmrun:{key}:… (the hash
// tag keeps it in one Redis Cluster slot). Tests alone replace that
// clock, to play package budgettest's scenarios at explicit instants and
// compare every decision with the in-process limiter's.
//
// Admission order is the in-process limiter's across every process: a
// Reserve that cannot be admitted at once enters the key's waiting room, a
// sorted set of tickets scored by virtual arrival (arrival on Redis's
// clock less priority × Aging; see limiter.VirtualArrival), and only the
// room's first ticket may be admitted. A ticket's place is leased: its
// process renews it while it waits, so a dead process's tickets leave the
// room after RoomLease. Whenever the first ticket changes or capacity
// frees, the scripts publish the first ticket's id on the key's channel;
// its process, subscribed, asks again at once. Nobody polls: a head
// blocked by the buckets or a pause sleeps until they allow it, one blocked
// by concurrency until a slot frees (or the first lease expires), the
// others until woken; the process's best waiter also asks again every
// RoomLease/3, in case a message was lost.
//
// Differences from the in-process limiter:
//
//   - Auto mode learns the limits the rate-limit headers name and shares
//     them on the key (llmrun:{K}:learned, with a version every
//     reservation checks), so every process uses what one learned. Where
//     no headers describe the key, the rates learned from 429s
//     (limiter.AIMD) are one learner on the key too, run by the scripts
//     (see aimd.go). The concurrency window is not learned:
//     Limits.Concurrency is the key's cap.
//   - Concurrency is a per-key set of in-flight tickets with leases: a live
//     process renews its tickets' leases every Lease/3, so the slots of a
//     process that crashed (or called Close) free themselves after Lease,
//     or at once when a process restarts in the same Holder role.
//   - Stats are this process's: its waits, reservations, in-flight tickets
//     and 429s, not the other processes' (Inspect reads the whole key).
//   - Budget.Observe (headers without a ticket) subtracts only this
//     process's in-flight charges; Ticket.Observe, which the runner uses,
//     subtracts everything charged to the key after the ticket, by any
//     process.
//   - Settle, Fail, Refused, Cancel and Observe cannot return errors: a
//     Redis failure there goes to Options.OnError (Health turns those
//     into one line when Redis goes away and one when it is back). A lost
//     Settle leaves the reservation charged (the safe side); its slot
//     expires with the lease.
//   - The acceleration governor is the in-process limiter's only: no
//     warm-up (Limits.WarmUp) and no hold after a refusal naming the
//     acceleration limit (Refusal.Ramp). Per-day budgets (limiter.Days)
//     are counted by each process, beside the shared budget.
//
// Every process sharing a key must configure the same limits and aging:
// the parameters travel with each call, the levels live in Redis.
//
// Redis keys, per budget key K (Prefix "llmrun" by default): K's state
// hash llmrun:{K}:state (levels, largest costs, cumulative charges, what
// last blocked the room; it expires StateTTL after the buckets would have
// refilled), the in-flight set llmrun:{K}:inflight (ticket ids scored by
// lease expiry), the pause llmrun:{K}:pause (expiring with the pause), the
// room llmrun:{K}:room (ticket ids scored by virtual arrival, µs) and its
// leases llmrun:{K}:roomlease (ticket ids scored by lease expiry), the
// learned limits llmrun:{K}:learned (v: version, h1..h4: per-minute limits,
// kept LearnTTL after the last response that named them; a_*: the AIMD of
// the rates learned from 429s, kept StateTTL) and the channel
// llmrun:{K}:wake. A ticket id is role-hash|host|pid|instance:seq@priority
// (see Holder). It needs Redis 5 or later (scripts that read TIME and then
// write), standalone, Sentinel or Cluster.
package redisbudget

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/redis/go-redis/v9"
)

// Defaults for Options.
const (
	DefaultPrefix    = "llmrun"
	DefaultLease     = 30 * time.Second
	DefaultMaxWait   = time.Second
	DefaultRoomLease = 3 * time.Second
	DefaultOpTimeout = 5 * time.Second
	// DefaultLearnTTL is how long limits learned from headers outlive the
	// last response that named them.
	DefaultLearnTTL = 24 * time.Hour
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
	// MaxWait caps one sleep of the room's first ticket between two asks,
	// so a change a lost message did not announce is noticed
	// (DefaultMaxWait).
	MaxWait time.Duration
	// RoomLease is how long a waiting ticket keeps its place in the room
	// after its process stops renewing it (DefaultRoomLease); the process
	// renews every RoomLease/3, and its best waiter then asks again.
	RoomLease time.Duration
	// Aging is how long a waiting ticket waits to rise one priority (see
	// limiter.Limiter.ReservePriority); 0 means none.
	Aging time.Duration
	// LearnTTL is how long limits learned from headers are kept on a key
	// after the last response that named them (DefaultLearnTTL).
	LearnTTL time.Duration
	// OpTimeout bounds each Redis call made without a caller's context, and
	// each reservation script (DefaultOpTimeout).
	OpTimeout time.Duration
	// StateTTL is how long a key's state outlives a full refill
	// (DefaultStateTTL).
	StateTTL time.Duration
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

	// Tests only: clock is Lua defining now_us() for the scripts (""
	// means Redis's TIME, see serverClock), now and newTimer this
	// process's clock and timers, so a test drives the budget at
	// explicit instants, as limiter.Options.Now does.
	clock    string
	now      func() time.Time
	newTimer func(time.Duration) (<-chan time.Time, func() bool)
}

// Budget is a limiter.Budget kept in Redis. It is safe for concurrent use.
// Call Close when done, to stop renewing leases.
type Budget struct {
	o        Options
	client   redis.UniversalClient
	sc       *scripts
	now      func() time.Time
	newTimer func(time.Duration) (<-chan time.Time, func() bool)
	holder   holderID // prefix of this process's ticket ids
	alive    func(pid int) bool

	mu   sync.Mutex // guards seq, keys, ps, channels
	seq  uint64
	keys map[string]*keyState
	// ps is the subscription to the keys' channels (nil until the first
	// key); channels maps each channel to its key.
	ps       *redis.PubSub
	channels map[string]*keyState

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
	o.Prefix = cmp.Or(o.Prefix, DefaultPrefix)
	o.Lease = positive(o.Lease, DefaultLease)
	o.MaxWait = positive(o.MaxWait, DefaultMaxWait)
	o.RoomLease = positive(o.RoomLease, DefaultRoomLease)
	o.LearnTTL = positive(o.LearnTTL, DefaultLearnTTL)
	o.OpTimeout = positive(o.OpTimeout, DefaultOpTimeout)
	o.StateTTL = positive(o.StateTTL, DefaultStateTTL)
	o.MaxPause = positive(o.MaxPause, limiter.DefaultMaxPause)
	b := &Budget{
		o:        o,
		client:   o.Client,
		sc:       serverScripts(),
		now:      o.now,
		newTimer: o.newTimer,
		holder:   newHolderID(o.Holder, crand.Text()[:16]),
		alive:    o.Holder.Alive,
		keys:     map[string]*keyState{},
		channels: map[string]*keyState{},
		stop:     make(chan struct{}),
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
	if o.clock != "" {
		b.sc = newScripts(o.clock)
	}
	b.renewed.Add(1)
	go b.renewLoop()
	return b, nil
}

// Close stops renewing leases and listening for wake-ups. Tickets still in
// flight are abandoned: their concurrency slots free themselves after
// Lease, and waiting ones leave the room after RoomLease. It does not
// close the Redis client. Close is idempotent.
func (b *Budget) Close() error {
	b.closeOnce.Do(func() {
		close(b.stop)
		b.mu.Lock()
		if b.ps != nil {
			b.ps.Close()
		}
		b.mu.Unlock()
	})
	b.renewed.Wait()
	return nil
}

// SetLimits configures key, replacing the defaults for it in this process.
// Every process sharing the key should set the same limits.
func (b *Budget) SetLimits(key string, lim limiter.Limits) error {
	k := b.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setLimits(lim)
	for _, w := range k.waiters {
		w.ask()
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

// seqWidth is the number of base-36 digits of the largest uint64.
const seqWidth = 13

// ticketID returns an id unique across processes. The sequence number is
// zero-padded to the width of any uint64 in base 36, so that the room
// (which orders equal scores by id) admits one process's Reserves of the
// same instant and priority in the order they were called, as the
// in-process limiter does: unpadded, call 36 ("10") came before call 9.
func (b *Budget) ticketID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	seq := strconv.FormatUint(b.seq, 36)
	return b.holder.String() + ":" + strings.Repeat("0", seqWidth-len(seq)) + seq
}

func (b *Budget) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.o.OpTimeout)
}

func (b *Budget) report(err error) {
	if err != nil && b.o.OnError != nil {
		b.o.OnError(err)
	}
}

// Reserve is shorthand for ReservePriority(ctx, key, c,
// limiter.PriorityNormal).
func (b *Budget) Reserve(ctx context.Context, key string, c limiter.Cost) (limiter.Ticket, error) {
	return b.ReservePriority(ctx, key, c, limiter.PriorityNormal)
}

// ReservePriority blocks until key is not paused, has a free concurrency
// slot, every bucket covers c and no ticket of any process waiting on the
// key comes before this one (higher effective priority, or the same and
// earlier), then takes c from every bucket at once and returns the ticket.
// A cost larger than a bucket's per-minute limit fails at once with a
// *limiter.TooLargeError. If ctx ends first, it returns ctx.Err() and the
// buckets are untouched; a Redis error is returned wrapped.
func (b *Budget) ReservePriority(ctx context.Context, key string, c limiter.Cost, prio int) (limiter.Ticket, error) {
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
	if err := b.ready(ctx, k); err != nil {
		return nil, err
	}

	arrived := b.now()
	prio = limiter.ClampPriority(prio)
	// The id names the priority too, for Inspect.
	w := &waiter{id: b.ticketID() + "@" + strconv.Itoa(prio), prio: prio, wake: make(chan struct{}, 1)}
	k.mu.Lock()
	k.enqueue(arrived)
	k.waiters[w.id] = w
	k.mu.Unlock()
	leave := func() {
		k.mu.Lock()
		delete(k.waiters, w.id)
		k.dequeue(b.now(), arrived)
		k.mu.Unlock()
	}
	giveUp := func(err error) (limiter.Ticket, error) {
		leave()
		b.leaveRoom(k, w)
		return nil, err
	}

	for {
		if err := ctx.Err(); err != nil {
			return giveUp(err)
		}
		k.mu.Lock()
		p, ver := k.p, k.learnedVersion()
		k.mu.Unlock()
		if err := p.tooLarge(key, c); err != nil { // limits may have changed
			return giveUp(err)
		}
		r, err := b.try(ctx, k, p, ver, c, w)
		if err != nil {
			return giveUp(err)
		}
		switch {
		case r.t != nil:
			leave()
			if err := ctx.Err(); err != nil { // admitted too late: give it back
				r.t.Cancel()
				return nil, err
			}
			return r.t, nil
		case r.stale:
			continue // learned limits taken: ask again with them
		}
		b.await(ctx, k, w, r)
	}
}

// await blocks w after the refusal r until its wait is over, a wake-up
// on the key's channel comes, or ctx ends.
func (b *Budget) await(ctx context.Context, k *keyState, w *waiter, r tryResult) {
	k.mu.Lock()
	k.block(b.now(), r.dim, r.wait)
	k.mu.Unlock()
	var fire <-chan time.Time
	stop := func() bool { return false }
	if r.first {
		// Buckets and pauses say how long; a free slot or a refund
		// wakes it sooner, and MaxWait bounds a lost wake-up.
		fire, stop = b.newTimer(min(r.wait, b.o.MaxWait))
	}
	select {
	case <-ctx.Done():
	case <-fire:
	case <-w.wake:
	}
	stop()
}

// ready prepares key k for this process's first Reserve on it: it frees
// the slots and room places of dead predecessors (see Holder) and
// subscribes to the key's channel. It runs once per key; a failure is
// returned and tried again by the next Reserve.
func (b *Budget) ready(ctx context.Context, k *keyState) error {
	k.setup.Lock()
	defer k.setup.Unlock()
	if k.ready {
		return nil
	}
	if _, err := b.reclaim(ctx, k); err != nil {
		return err
	}
	if err := b.subscribe(ctx, k); err != nil {
		return err
	}
	k.ready = true
	return nil
}

// subscribe listens on k's channel, starting the subscription with the
// first key.
func (b *Budget) subscribe(ctx context.Context, k *keyState) error {
	b.mu.Lock()
	ps := b.ps
	first := ps == nil
	if first {
		ps = b.client.Subscribe(ctx)
		b.ps = ps
	}
	b.channels[k.channel] = k
	b.mu.Unlock()
	if first {
		b.renewed.Add(1)
		go b.listen(ps.Channel())
	}
	if err := ps.Subscribe(ctx, k.channel); err != nil {
		return fmt.Errorf("redisbudget: subscribe to %q: %w", k.name, err)
	}
	return nil
}

// listen wakes the waiter each message names, if it is this process's,
// until Close.
func (b *Budget) listen(msgs <-chan *redis.Message) {
	defer b.renewed.Done()
	for {
		select {
		case <-b.stop:
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			b.mu.Lock()
			k := b.channels[m.Channel]
			b.mu.Unlock()
			if k == nil {
				continue
			}
			k.mu.Lock()
			if w := k.waiters[m.Payload]; w != nil {
				w.ask()
			}
			k.mu.Unlock()
		}
	}
}

// leaveRoom takes a waiter that gives up out of the room; a failure only
// leaves its place to expire with its lease.
func (b *Budget) leaveRoom(k *keyState, w *waiter) {
	if !w.entered {
		return
	}
	ctx, cancel := b.opContext()
	defer cancel()
	if err := leaveScript().Run(ctx, b.client, []string{k.redisKeys[rkRoom], k.redisKeys[rkRoomLease]}, k.channel, w.id).Err(); err != nil {
		b.report(fmt.Errorf("redisbudget: leave the room of %q: %w", k.name, err))
	}
}

// tryResult is one ask's answer: the ticket; or the learned limits were
// stale (and are now taken); or how long to wait, for what, and whether w
// is the room's first.
type tryResult struct {
	t     *ticket
	stale bool
	wait  time.Duration
	dim   limiter.Dimension
	first bool
}

// try runs the reservation script once for waiter w. The script runs even
// if ctx ends meanwhile (an admission whose answer was lost would leak its
// charge); Reserve cancels a ticket admitted too late.
func (b *Budget) try(ctx context.Context, k *keyState, p params, ver int64, c limiter.Cost, w *waiter) (tryResult, error) {
	aging := b.o.Aging
	if aging <= 0 || aging > limiter.MaxAging {
		aging = limiter.MaxAging
	}
	k.mu.Lock()
	conf := k.conf
	k.mu.Unlock()
	args := make([]any, 0, 12+4*numBuckets)
	args = append(args, w.id, micros(b.o.Lease), p.conc, p.skew, b.o.StateTTL.Milliseconds(),
		micros(b.o.RoomLease), strconv.FormatFloat(w.score, 'f', 0, 64), int64(w.prio)*micros(aging), k.channel, ver,
		conf.Headroom, conf.Burst.Seconds())
	for i := range numBuckets {
		args = append(args, p.rate[i], p.base[i], p.max[i], c.Amount(i))
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.o.OpTimeout)
	defer cancel()
	res, err := b.sc.reserve.Run(rctx, b.client, k.redisKeys[:], args...).Slice()
	bad := func() (tryResult, error) {
		return tryResult{}, fmt.Errorf("redisbudget: reserve %q: unexpected reply %v", k.name, res)
	}
	if err != nil {
		return tryResult{}, fmt.Errorf("redisbudget: reserve %q: %w", k.name, err)
	}
	if len(res) < 1 {
		return bad()
	}
	switch code, _ := res[0].(int64); code {
	case 0:
		if len(res) != 5 {
			return bad()
		}
		wt, _ := res[1].(int64)
		d, _ := res[2].(int64)
		sc, _ := res[3].(int64)
		first, _ := res[4].(int64)
		k.mu.Lock()
		w.score, w.entered = float64(sc), true
		k.mu.Unlock()
		return tryResult{wait: time.Duration(wt) * time.Microsecond, dim: limiter.Dimension(d), first: first == 1}, nil
	case 2:
		if len(res) != 2+numBuckets {
			return bad()
		}
		v, _ := res[1].(int64)
		var lim [numBuckets]float64
		for i := range numBuckets {
			s, _ := res[2+i].(string)
			if lim[i], err = strconv.ParseFloat(s, 64); err != nil {
				return bad()
			}
		}
		k.mu.Lock()
		k.learn(v, lim)
		k.mu.Unlock()
		return tryResult{stale: true}, nil
	}
	if len(res) != 6+numBuckets {
		return bad()
	}
	t := &ticket{b: b, k: k, id: w.id, cost: c, mask: p.mask(), at: b.now()}
	for i := range numBuckets {
		s, _ := res[1+i].(string)
		if t.after[i], err = strconv.ParseFloat(s, 64); err != nil {
			return bad()
		}
	}
	t.ep, _ = res[1+numBuckets].(int64)
	t.ms, _ = res[2+numBuckets].(int64)
	k.mu.Lock()
	k.admit(t)
	k.aimd(res[3+numBuckets], res[4+numBuckets], res[5+numBuckets])
	k.mu.Unlock()
	return tryResult{t: t}, nil
}

// Observe applies rate-limit headers that belong to no ticket: it lowers
// each bucket to what o says remained minus this process's in-flight
// charges (never raising it). Prefer Ticket.Observe, which subtracts what
// every process admitted after the observed request.
func (b *Budget) Observe(key string, o limiter.Observation) {
	k := b.key(key)
	k.mu.Lock()
	unseen := k.out
	k.mu.Unlock()
	b.observe(k, o, 0, 'p', unseen)
}

// observe runs the observe script; mode 't' takes arg as the ticket's
// cumulative-charge snapshot, 'p' as the unseen charge itself. In Auto
// mode it publishes the limits the headers name and takes the key's
// learned limits back.
func (b *Budget) observe(k *keyState, o limiter.Observation, age time.Duration, mode byte, arg [numBuckets]float64) {
	ws := [numBuckets]limiter.Window{o.Requests, o.Input, o.Output, o.Tokens}
	if known(o.Input) || known(o.Output) {
		// Separate input and output limits: the combined window only
		// restates the most restrictive of them (as in package limiter).
		ws[3] = limiter.Window{}
	}
	var named [numBuckets]float64
	k.mu.Lock()
	auto, p, conf := k.conf.Auto, k.p, k.conf
	learned := k.learned
	for i, w := range ws {
		if auto && w.Limit > 0 {
			named[i] = float64(w.Limit)
			learned[i] = named[i]
		}
	}
	if auto && learned != k.learned {
		// A bucket the headers just named is lowered by the same headers.
		p = paramsOf(k.conf, learned)
	}
	k.mu.Unlock()
	keep := int64(0)
	if auto {
		keep = b.o.LearnTTL.Milliseconds()
	}
	args := make([]any, 0, 7+6*numBuckets)
	args = append(args, max(age, 0).Seconds(), string(mode), b.o.StateTTL.Milliseconds(), keep, k.channel, conf.Headroom, conf.Burst.Seconds())
	some := named != [numBuckets]float64{}
	for i, w := range ws {
		rem := int64(-1)
		if w != (limiter.Window{}) && w.Remaining >= 0 && p.rate[i] > 0 {
			rem, some = w.Remaining, true
		}
		args = append(args, p.rate[i], p.base[i], p.max[i], rem, arg[i], named[i])
	}
	if !some {
		return
	}
	ctx, cancel := b.opContext()
	defer cancel()
	keys := []string{k.redisKeys[rkState], k.redisKeys[rkLearned], k.redisKeys[rkRoom]}
	res, err := b.sc.observe.Run(ctx, b.client, keys, args...).Slice()
	if err != nil {
		b.report(fmt.Errorf("redisbudget: observe %q: %w", k.name, err))
		return
	}
	if len(res) != 1+numBuckets {
		return // explicit limits: nothing learned
	}
	v, _ := res[0].(int64)
	for i := range numBuckets {
		s, _ := res[1+i].(string)
		learned[i], _ = strconv.ParseFloat(s, 64)
	}
	k.mu.Lock()
	k.learn(v, learned)
	k.mu.Unlock()
}

// known reports whether a header said anything about w.
func known(w limiter.Window) bool {
	return w != (limiter.Window{}) && (w.Limit >= 0 || w.Remaining >= 0)
}

// pause stops all admissions for key, in every process, until the given
// instant (a 429 with retry-after), but for at most MaxPause: a longer hint
// is cut to it, counted and reported to Warn when it starts a pause. An
// earlier pause never shortens a later one. The instant is
// turned into a duration from this process's clock, so the clocks of other
// machines do not matter. Runs pause a key through Ticket.Refused; tests
// set a pause directly.
func (b *Budget) pause(key string, until time.Time) {
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
	before, err := b.sc.pause.Run(ctx, b.client, k.redisKeys[rkPause:rkPause+1], micros(d)).Int64()
	if err != nil {
		b.report(fmt.Errorf("redisbudget: pause %q: %w", k.name, err))
		return
	}
	// Told when it starts a pause: the 429s of one congestion tell once.
	if d < asked && before == 0 && b.o.Warn != nil {
		b.o.Warn(limiter.PauseClampedMessage(key, asked, b.o.MaxPause))
	}
}

// Stats returns a snapshot of every key this process used, sorted by key:
// the configured limits, those in force (learned ones included) and this
// process's waits, binding dimension, in-flight tickets, reservations and
// 429s. PausedUntil is the latest pause this process set or ran into.
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
// Lease/3, and those of its waiting tickets every RoomLease/3 (waking each
// key's best waiter then, in case a wake-up was lost), until Close.
func (b *Budget) renewLoop() {
	defer b.renewed.Done()
	slots := time.NewTicker(b.o.Lease / 3)
	defer slots.Stop()
	room := time.NewTicker(b.o.RoomLease / 3)
	defer room.Stop()
	for {
		var waiting bool
		select {
		case <-b.stop:
			return
		case <-slots.C:
		case <-room.C:
			waiting = true
		}
		b.mu.Lock()
		ks := make([]*keyState, 0, len(b.keys))
		for _, k := range b.keys {
			ks = append(ks, k)
		}
		b.mu.Unlock()
		for _, k := range ks {
			if waiting {
				b.renewRoom(k)
			} else {
				b.renewSlots(k)
			}
		}
	}
}

// renewSlots renews the leases of k's in-flight tickets.
func (b *Budget) renewSlots(k *keyState) {
	k.mu.Lock()
	if k.p.conc == 0 || len(k.inflight) == 0 { // no lease to renew
		k.mu.Unlock()
		return
	}
	ids := make([]any, 0, 1+len(k.inflight))
	ids = append(ids, micros(b.o.Lease))
	for id := range k.inflight {
		ids = append(ids, id)
	}
	k.mu.Unlock()
	ctx, cancel := b.opContext()
	defer cancel()
	if err := b.sc.renew.Run(ctx, b.client, k.redisKeys[rkInflight:rkInflight+1], ids...).Err(); err != nil {
		b.report(fmt.Errorf("redisbudget: renew leases of %q: %w", k.name, err))
	}
}

// renewRoom renews the room leases of k's waiting tickets and wakes the
// best of them.
func (b *Budget) renewRoom(k *keyState) {
	k.mu.Lock()
	ids := make([]any, 0, 1+len(k.waiters))
	ids = append(ids, micros(b.o.RoomLease))
	for id, w := range k.waiters {
		if w.entered {
			ids = append(ids, id)
		}
	}
	if w := k.bestWaiter(); w != nil {
		w.ask()
	}
	k.mu.Unlock()
	if len(ids) == 1 {
		return
	}
	ctx, cancel := b.opContext()
	defer cancel()
	if err := b.sc.renew.Run(ctx, b.client, k.redisKeys[rkRoomLease:rkRoomLease+1], ids...).Err(); err != nil {
		b.report(fmt.Errorf("redisbudget: renew room leases of %q: %w", k.name, err))
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
