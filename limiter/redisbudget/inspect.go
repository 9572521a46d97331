package redisbudget

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrun/llmrun/limiter"
)

// KeyReport is one budget key as Redis holds it, every process's share
// included: what `llmrun status --redis` shows.
type KeyReport struct {
	Key string `json:"key"`
	// PerMinute is the limit in force per bucket (requests, input, output,
	// combined tokens; headroom applied), as the last call on the key
	// passed it; 0 for no bucket. Level is the bucket's content now, and
	// Capacity what it holds when full.
	PerMinute [numBuckets]float64 `json:"per_minute"`
	Level     [numBuckets]float64 `json:"level"`
	Capacity  [numBuckets]float64 `json:"capacity"`
	// Concurrency is the key's in-flight cap (0: none).
	Concurrency int `json:"concurrency"`
	// Learned is the per-minute limits the key's headers named (Auto
	// mode; 0 = not learned), at LearnedVersion.
	Learned        [numBuckets]float64 `json:"learned"`
	LearnedVersion int64               `json:"learned_version"`
	// PausedFor is what remains of a key-wide pause.
	PausedFor time.Duration `json:"paused_for"`
	// Blocked is what last kept the room's first ticket waiting.
	Blocked string `json:"blocked,omitempty"`
	// InFlight counts the tickets holding concurrency slots (only leased
	// ones: a key without a concurrency limit holds none), Waiting those
	// in the room, WaitingByPriority by their priority.
	InFlight          int             `json:"in_flight"`
	Waiting           int             `json:"waiting"`
	WaitingByPriority map[string]int  `json:"waiting_by_priority"`
	Processes         []ProcessReport `json:"processes"`
}

// ProcessReport is one process's tickets on a key.
type ProcessReport struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Role is a hash of the process's role (its output file), "" if none.
	Role              string         `json:"role,omitempty"`
	Instance          string         `json:"instance"`
	InFlight          int            `json:"in_flight"`
	Waiting           int            `json:"waiting"`
	WaitingByPriority map[string]int `json:"waiting_by_priority,omitempty"`
}

// inspectScript reads one key's data at the server's now. KEYS: state,
// in-flight set, pause, room, room leases, learned. It returns {now, state
// fields and values…}, {in-flight ids}, {room ids}, pause (µs, 0 if
// none), {learned fields and values…}; expired leases are left out.
var inspectScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = string.format('%.0f', now)
local inflight = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. n, '+inf')
local room = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local l = tonumber(redis.call('ZSCORE', KEYS[5], id) or '0')
  if l > now then room[#room + 1] = id end
end
local pause = math.max((tonumber(redis.call('GET', KEYS[3]) or '0') or 0) - now, 0)
return {n, redis.call('HGETALL', KEYS[1]), inflight, room, pause, redis.call('HGETALL', KEYS[6])}
`)
})

// Keys lists the budget keys that have data on the Redis client talks to
// under prefix (DefaultPrefix if empty), sorted. On a Redis Cluster it
// scans every master.
func Keys(ctx context.Context, client redis.UniversalClient, prefix string) ([]string, error) {
	prefix = cmp.Or(prefix, DefaultPrefix)
	seen := map[string]bool{}
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, globEscape(prefix)+":{*}:*", 1000).Iterator()
		for it.Next(ctx) {
			k := it.Val()
			end := strings.LastIndex(k, "}:")
			if start := len(prefix) + 2; end >= start {
				seen[k[start:end]] = true
			}
		}
		return it.Err()
	}
	var err error
	if cc, ok := client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, client)
	}
	if err != nil {
		return nil, fmt.Errorf("redisbudget: list keys: %w", err)
	}
	return slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	}), nil
}

// globEscape quotes the characters SCAN's MATCH pattern treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Inspect reads budget key name as every process sharing it sees it: its
// limits, bucket levels and pause, what it learned, and its tickets in
// flight and waiting, by process and priority.
func Inspect(ctx context.Context, client redis.UniversalClient, prefix, name string) (KeyReport, error) {
	k := newKeyState(name, cmp.Or(prefix, DefaultPrefix), limiter.Limits{}, time.Time{})
	res, err := inspectScript().Run(ctx, client, k.redisKeys[:]).Slice()
	if err != nil {
		return KeyReport{}, fmt.Errorf("redisbudget: inspect %q: %w", name, err)
	}
	if len(res) != 6 {
		return KeyReport{}, fmt.Errorf("redisbudget: inspect %q: unexpected reply %v", name, res)
	}
	now, _ := strconv.ParseFloat(str(res[0]), 64)
	rep := KeyReport{Key: name, WaitingByPriority: map[string]int{}}
	rep.readState(pairs(res[1]), now)
	pause, _ := res[4].(int64)
	rep.PausedFor = time.Duration(pause) * time.Microsecond
	learned := pairs(res[5])
	rep.LearnedVersion = int64(field(learned, "v"))
	for i := range numBuckets {
		rep.Learned[i] = field(learned, "h"+strconv.Itoa(i+1))
	}
	rep.countTickets(strs(res[2]), strs(res[3]))
	return rep, nil
}

// field is the number in m's field f, 0 when it is missing or not finite.
func field(m map[string]string, f string) float64 {
	v, _ := strconv.ParseFloat(m[f], 64)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// readState fills the limits, bucket levels (refilled up to now, in
// Redis's microseconds), concurrency and blocking dimension from the
// key's state hash st.
func (rep *KeyReport) readState(st map[string]string, now float64) {
	last := field(st, "t")
	for i := range numBuckets {
		n := strconv.Itoa(i + 1)
		rate, capacity := field(st, "r"+n), field(st, "k"+n)
		if rate <= 0 {
			continue
		}
		rep.PerMinute[i], rep.Capacity[i] = rate*60, capacity
		rep.Level[i] = capacity
		if l, ok := st["l"+n]; ok {
			lv, _ := strconv.ParseFloat(l, 64)
			rep.Level[i] = min(lv+rate*max(now-last, 0)/1e6, capacity)
		}
	}
	rep.Concurrency = int(field(st, "cc"))
	if d := limiter.Dimension(field(st, "bd")); d > limiter.DimNone && d < limiter.NumDimensions {
		rep.Blocked = d.String()
	}
}

// countTickets counts the tickets in flight and waiting, in all and by
// the process holding them (ordered by host, pid and instance), the
// waiting ones by the priority their id names.
func (rep *KeyReport) countTickets(inFlight, waiting []string) {
	procs := map[string]*ProcessReport{}
	proc := func(id string) *ProcessReport {
		h, ok := parseTicket(id)
		if !ok {
			h = holderID{instance: id}
		}
		p := procs[h.instance]
		if p == nil {
			p = &ProcessReport{Host: h.host, PID: h.pid, Role: h.role, Instance: h.instance}
			procs[h.instance] = p
		}
		return p
	}
	for _, id := range inFlight {
		rep.InFlight++
		proc(id).InFlight++
	}
	for _, id := range waiting {
		rep.Waiting++
		p := proc(id)
		p.Waiting++
		prio := "0"
		if _, s, ok := strings.Cut(id, "@"); ok {
			prio = s
		}
		rep.WaitingByPriority[prio]++
		if p.WaitingByPriority == nil {
			p.WaitingByPriority = map[string]int{}
		}
		p.WaitingByPriority[prio]++
	}
	for _, p := range procs {
		rep.Processes = append(rep.Processes, *p)
	}
	slices.SortFunc(rep.Processes, func(a, b ProcessReport) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.PID, b.PID), cmp.Compare(a.Instance, b.Instance))
	})
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

func strs(v any) []string {
	xs, _ := v.([]any)
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, str(x))
	}
	return out
}

// pairs reads a flat field, value, field, value… reply (HGETALL in a
// script) into a map.
func pairs(v any) map[string]string {
	xs := strs(v)
	m := make(map[string]string, len(xs)/2)
	for i := 0; i+1 < len(xs); i += 2 {
		m[xs[i]] = xs[i+1]
	}
	return m
}
