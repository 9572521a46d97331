package redisbudget

import (
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/llmrun/llmrun/limiter"
)

// The Lua scripts. Every script reads the clock through now_us(), which is
// redis.call('TIME') (serverClock), so the clocks of the machines sharing a
// budget do not matter: callers only ever pass durations (lease, skew, the
// age of a header, a pause), never instants.
//
// A key's state is one hash, KEYS[1] = llmrun:{key}:state, with fields
//
//	t      instant (µs, server clock) the levels were last refilled to
//	l1..l4 bucket levels (requests, input, output, combined tokens); an
//	       absent level is a full bucket
//	g1..g4 largest single cost seen per bucket (capacity never below it)
//	c1..c4 cumulative net charge per bucket (admissions plus
//	       reconciliation), what Ticket.Observe subtracts from
//	r1..r4 refill rates (per second, headroom applied; 0: no bucket) and
//	k1..k4 capacities the last call used, and cc its concurrency limit:
//	       for Inspect, which has no parameters of its own
//	bd     the dimension that last blocked the room's first ticket
//
// Bucket parameters (refill rate per second with headroom applied, burst
// capacity, largest admissible cost) come from the caller on every call:
// every process sharing a key must configure the same limits.

// serverClock defines now_us() as Redis's own clock, µs. Only tests
// replace it (Options.clock), to drive the scripts at explicit instants.
const serverClock = `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
`

// scripts are the scripts that read the clock, each with now_us() defined
// by the same clock text.
type scripts struct {
	reserve, finish, refused, observe, pause, renew *redis.Script
}

// newScripts builds the scripts on clock, Lua that defines now_us().
func newScripts(clock string) *scripts {
	head := clock + bucketHead()
	return &scripts{
		reserve: redis.NewScript(head + reserveSrc),
		finish:  redis.NewScript(head + finishSrc),
		refused: redis.NewScript(head + refusedSrc),
		observe: redis.NewScript(head + observeSrc),
		pause:   redis.NewScript(clock + pauseSrc),
		renew:   redis.NewScript(clock + renewSrc),
	}
}

// bucketHead is the text the bucket scripts start with after the clock:
// the helpers and the AIMD constants. It is built when a Budget first
// needs its scripts, not in every process's start-up (most runs have no
// Redis; fmt and the string joins were 0.3 ms and 100 KB of every start).
func bucketHead() string { return prelude + roomPrelude + aimdPrelude(limiter.SharedAIMD) }

// serverScripts are the scripts on Redis's clock: every Budget's but a
// test's. They are built and hashed on first use: most runs have no Redis.
var serverScripts = sync.OnceValue(func() *scripts { return newScripts(serverClock) })

// prelude defines the helpers shared by the scripts. base is the ARGV index
// before bucket 1's parameters; each bucket has stride parameters, the first
// three being rate, burst capacity and maximum; over, if set, may replace
// them (the rates learned from 429s, see aimdPrelude).
const prelude = `
local function load(now, base, stride, over)
  local st = redis.call('HMGET', KEYS[1], 't', 'l1', 'l2', 'l3', 'l4',
    'g1', 'g2', 'g3', 'g4', 'c1', 'c2', 'c3', 'c4')
  local last = tonumber(st[1]) or now
  local dt = math.max(now - last, 0) / 1e6
  local b = {}
  for i = 1, 4 do
    local o = base + (i - 1) * stride
    local x = {rate = tonumber(ARGV[o + 1]), base = tonumber(ARGV[o + 2]),
      max = tonumber(ARGV[o + 3]), big = tonumber(st[5 + i]) or 0,
      cum = tonumber(st[9 + i]) or 0}
    if over then over(i, x) end
    x.cap = math.min(math.max(x.base, x.big), x.max)
    if x.rate > 0 then
      local l = tonumber(st[1 + i])
      if l == nil then
        x.level = x.cap
      else
        x.level = math.min(l + x.rate * dt, x.cap)
      end
    end
    b[i] = x
  end
  return b
end

local function save(now, b, ttl_ms)
  local args = {'t', string.format('%.0f', now)}
  local refill = 0
  for i = 1, 4 do
    local x = b[i]
    if x.rate > 0 then
      args[#args + 1] = 'l' .. i
      args[#args + 1] = string.format('%.17g', x.level)
      refill = math.max(refill, (x.cap - x.level) / x.rate)
    end
    args[#args + 1] = 'r' .. i
    args[#args + 1] = string.format('%.17g', x.rate)
    args[#args + 1] = 'k' .. i
    args[#args + 1] = string.format('%.17g', x.cap)
    if x.big > 0 then
      args[#args + 1] = 'g' .. i
      args[#args + 1] = string.format('%.17g', x.big)
    end
    args[#args + 1] = 'c' .. i
    args[#args + 1] = string.format('%.17g', x.cum)
  end
  redis.call('HSET', KEYS[1], unpack(args))
  -- The state outlives the time to refill every bucket (after which an
  -- absent hash, a full budget, is the truth) by ttl_ms.
  redis.call('PEXPIRE', KEYS[1], math.ceil(refill * 1000) + ttl_ms)
end

-- settle moves every bucket by its delta, the fourth parameter after base:
-- a refund (positive) up to the capacity, a charge (negative) possibly
-- below zero; the cumulative charge moves by -delta.
local function settle(b, base)
  for i = 1, 4 do
    local x = b[i]
    local d = tonumber(ARGV[base + (i - 1) * 4 + 4])
    if x.rate > 0 and d ~= 0 then
      if d > 0 then
        x.level = math.max(x.level, math.min(x.level + d, x.cap))
      else
        x.level = x.level + d
      end
      x.cum = x.cum - d
    end
  end
end
`

// The waiting room. A Reserve that cannot be admitted at once enters the
// key's room, KEYS room (a sorted set of ticket ids scored by virtual
// arrival: the server's clock at the ticket's first ask, µs, less its
// priority × aging) with a lease in KEYS roomlease (ticket id → expiry,
// µs), renewed while its process waits. Only the room's first ticket may be
// admitted, so admissions follow (effective priority, arrival) across every
// process, not polling luck. Expired tickets (a dead process's) are purged
// by whichever script reads the room next. When the first ticket changes
// or capacity frees, the scripts PUBLISH the id of the room's first ticket
// on the key's channel, so that its process asks at once.
const roomPrelude = `
local function purge_room(room, lease, now)
  local dead = redis.call('ZRANGEBYSCORE', lease, '-inf', string.format('%.0f', now))
  for i = 1, #dead, 1000 do
    redis.call('ZREM', room, unpack(dead, i, math.min(i + 999, #dead)))
  end
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', lease, '-inf', string.format('%.0f', now))
  end
end

local function wake_first(room, chan)
  local h = redis.call('ZRANGE', room, 0, 0)
  if h[1] then redis.call('PUBLISH', chan, h[1]) end
end
`

// reserveSrc admits a cost or says how long to wait.
//
// KEYS: state, in-flight set, pause, room, room leases, learned. ARGV:
// ticket id, lease (µs), concurrency limit (0 = none), skew (s), state TTL
// (ms), room lease (µs), the ticket's score (0 when it has none yet),
// priority × aging (µs), the key's channel, the learned version the
// parameters come from (-1: explicit limits), headroom, burst (s), then per
// bucket: rate, burst capacity, maximum, amount. While no headers describe
// the key, the rates learned from 429s (see aimd.go) govern its requests
// and combined-tokens buckets.
//
// If the learned limits changed since that version it takes nothing and
// returns {2, version, h1..h4}: the caller recomputes its parameters and
// asks again. If another ticket is first in the room it enters the room
// (or renews its place) and returns {0, 0, dimension that last blocked the
// room's first, score, 0}. Otherwise it refills the buckets to the
// server's now and raises a capacity to a cost larger than the burst
// (topping a full bucket up, as the in-process limiter does). If the key
// is paused or a bucket does not hold the cost plus its skew margin, or
// the concurrency limit is reached (leases past their expiry do not
// count), it takes nothing, enters the room and returns {0, wait µs,
// dimension, score, 1}: the longest wait of pause and buckets, or for
// concurrency the time until the first lease expires. Otherwise it takes
// the cost from every bucket at once, adds the ticket to the in-flight set
// with the lease, leaves the room (waking the next first) and returns {1,
// cum1..cum4, epoch, measurement, request rate, token rate, cuts}: the
// cumulative charges right after this admission and the learned rates (per
// second, 0: none), as strings, and the ticket's AIMD mark.
const reserveSrc = `
local now = now_us()
local id, lease, conc = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local skew, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local rlease, score, offset, chan = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local want = tonumber(ARGV[10])
local hr, burst = tonumber(ARGV[11]), tonumber(ARGV[12])
if want >= 0 then
  local l = redis.call('HMGET', KEYS[6], 'v', 'h1', 'h2', 'h3', 'h4')
  local v = tonumber(l[1]) or 0
  if v ~= want then
    return {2, v, l[2] or '0', l[3] or '0', l[4] or '0', l[5] or '0'}
  end
end

purge_room(KEYS[4], KEYS[5], now)
local mine = redis.call('ZSCORE', KEYS[4], id)
if mine then
  score = tonumber(mine)
elseif score == 0 then
  score = now - offset
end
local function enter()
  redis.call('ZADD', KEYS[4], string.format('%.0f', score), id)
  redis.call('ZADD', KEYS[5], string.format('%.0f', now + rlease), id)
  local keep = math.ceil(rlease / 1000) + ttl
  redis.call('PEXPIRE', KEYS[4], keep)
  redis.call('PEXPIRE', KEYS[5], keep)
end
local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if first[1] and first[1] ~= id then
  local fs = tonumber(first[2])
  if fs < score or (fs == score and first[1] < id) then
    enter()
    return {0, 0, tonumber(redis.call('HGET', KEYS[1], 'bd') or '0') or 0, score, 0}
  end
end

local ai, b = load_learned(KEYS[6], now, 12, 4, hr, burst)
local on = ai ~= nil
local amount = {}
for i = 1, 4 do
  local x = b[i]
  local a = tonumber(ARGV[12 + (i - 1) * 4 + 4])
  amount[i] = a
  if x.rate > 0 and a > x.cap and a <= x.max then
    if x.level >= x.cap - 1e-6 then x.level = a end
    x.big = a
    x.cap = a
  end
end

local wait, dim = 0, 0
local paused = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
if paused > now then wait, dim = paused - now, 6 end
for i = 1, 4 do
  local x, a = b[i], amount[i]
  if x.rate > 0 then
    local need = a
    if a > 0 and not x.paced then need = math.min(a + x.rate * skew, math.max(x.cap, a)) end
    local short = need - x.level
    if short > 1e-6 then
      local d = math.max(math.ceil(short / x.rate * 1e6), 1)
      if d > wait or dim == 0 then wait, dim = d, i end
    end
  end
end
if dim == 0 and conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', now))
  if redis.call('ZCARD', KEYS[2]) >= conc then
    local e = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    wait, dim = math.max(math.ceil(tonumber(e[2]) - now), 1), 5
  end
end
redis.call('HSET', KEYS[1], 'cc', conc)
if dim ~= 0 then
  save(now, b, ttl)
  redis.call('HSET', KEYS[1], 'bd', dim)
  enter()
  return {0, wait, dim, score, 1}
end

if conc > 0 then
  redis.call('ZADD', KEYS[2], string.format('%.0f', now + lease), id)
  redis.call('PEXPIRE', KEYS[2], math.ceil(lease / 1000) + ttl)
end
local out = {1}
for i = 1, 4 do
  local x = b[i]
  if x.rate > 0 then
    x.level = x.level - amount[i]
    x.cum = x.cum + amount[i]
  end
  out[i + 1] = string.format('%.17g', x.cum)
end
save(now, b, ttl)
if on then
  aimd_sent(ai, now, amount[1], amount[2] + amount[3])
  aimd_save(KEYS[6], ai, ttl)
  out[6], out[7], out[8], out[9], out[10] = ai.ep, ai.ms, string.format('%.17g', ai.r1), string.format('%.17g', ai.r2), ai.cuts
else
  out[6], out[7], out[8], out[9], out[10] = -1, -1, '0', '0', 0
end
if mine then
  redis.call('ZREM', KEYS[4], id)
  redis.call('ZREM', KEYS[5], id)
end
wake_first(KEYS[4], chan)
return out
`

// finishSrc ends a ticket: it reconciles the buckets, frees the slot,
// tells the shared AIMD and wakes the room's first ticket, which may now
// fit.
//
// KEYS: state, in-flight set, room, learned. ARGV: ticket id, state TTL
// (ms), the key's channel, headroom, burst (s), how it ended ('s' answered,
// 'f' failed, 'c' never sent), its AIMD epoch and measurement, the
// requests and tokens reserved and the tokens used, the answer's latency
// (µs) and 1 if the key learns its limits (Auto: a first answer starts the
// AIMD's ramp), then per bucket: rate, burst capacity, maximum, delta. A
// positive delta (over-reservation, or what a failed or cancelled attempt
// returns) is refunded up to the capacity; a negative one
// (under-reservation) is charged, possibly making the level negative. The
// cumulative charge moves by -delta.
const finishSrc = `
local now = now_us()
local ttl, hr, burst, kind = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local ms, req, rtok, atok = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local ai, b = load_learned(KEYS[4], now, 13, 4, hr, burst)
local on = ai ~= nil
settle(b, 13)
save(now, b, ttl)
redis.call('ZREM', KEYS[2], ARGV[1])
if on then
  if kind == 's' then
    aimd_answered(ai, ms, rtok, atok)
    if ARGV[13] == '1' then aimd_ramp(ai, now, tonumber(ARGV[12])) end
  elseif kind == 'f' then
    aimd_failed(ai, ms, rtok)
  elseif kind == 'c' then
    aimd_unsent(ai, ms, req, rtok)
  end
  aimd_save(KEYS[4], ai, ttl)
end
wake_first(KEYS[3], ARGV[3])
return 1
`

// refusedSrc ends a ticket the server refused for load, as a failure
// (the request charge stays, the tokens return, the slot frees), and
// tells the key: a 429 (not an overload) feeds the shared AIMD while no
// headers describe the key (a cut, unless it is an echo of the last one,
// empties the buckets the learned rates govern: the server's is empty),
// and pauses every process for the server's hint or, without one, for
// the AIMD's backoff (as with limits given; an echo, a ticket of an epoch
// before the last cut or backoff, backs off no further); an overload
// pauses only for a hint. Pauses are cut to the maximum and never shorten
// a later one.
//
// KEYS: state, in-flight set, room, learned, pause. ARGV: ticket id, state
// TTL (ms), the key's channel, headroom, burst (s), 1 for an overload, the
// ticket's AIMD epoch and measurement, its requests and tokens reserved,
// the hint (µs, negative: none), the longest pause (µs), then per bucket:
// rate, burst capacity, maximum, delta (as finishSrc), then 1 when the
// 429 is bare (the AIMD learns from it: nothing describes the key, see
// limiter.Refusal), what it names for the AIMD (0 nothing, 1 requests, 2
// tokens) and the bucket a described key's 429 empties (1-4, 0 none; -1: the
// 429 carried headers, a calibration without backoff). It returns
// {echo, pause set (µs), pause before (µs), request rate, token rate,
// cuts}, the rates as strings.
const refusedSrc = `
local now = now_us()
local ttl, hr, burst, overloaded = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local ep, ms, req, rtok = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local hint, maxpause = tonumber(ARGV[11]), tonumber(ARGV[12])
local ai, b = load_learned(KEYS[4], now, 12, 4, hr, burst)
local on = ai ~= nil
settle(b, 12) -- the deltas are refunds: the tokens return
redis.call('ZREM', KEYS[2], ARGV[1])
local bare, named = ARGV[29] == '1', tonumber(ARGV[30])
local echo, pause = true, 0
if on and bare and not overloaded then
  echo, pause = aimd_refused(ai, now, ep, ms, req, rtok, hint >= 0, named)
  if not echo then
    -- The cut takes effect at once: the governed buckets at the new
    -- rates, emptied.
    local over = aimd_over(ai, hr, burst)
    for i = 1, 4 do
      local x = b[i]
      local o = 12 + (i - 1) * 4
      local y = {rate = tonumber(ARGV[o + 1]), base = tonumber(ARGV[o + 2]), max = tonumber(ARGV[o + 3])}
      over(i, y)
      if y.aimd then
        x.rate, x.base, x.max = y.rate, y.base, y.max
        x.cap = math.min(math.max(x.base, x.big), x.max)
        x.level = math.min(x.level or x.cap, 0)
      end
    end
  end
  aimd_save(KEYS[4], ai, ttl)
elseif not overloaded and ARGV[31] ~= '-1' and hint < 0 then
  -- A described key's calibration (limiter's calibrate): the bucket the
  -- 429 named is empty, and without headers ever, the backoff.
  local x = b[tonumber(ARGV[31])]
  if x and x.rate > 0 then x.level = math.min(x.level, 0) end
  if on then
    pause = aimd_backoff(ai, ep)
    aimd_save(KEYS[4], ai, ttl)
  end
end
save(now, b, ttl)
if hint >= 0 then pause = hint end
local set, before = 0, 0
local cur = tonumber(redis.call('GET', KEYS[5]) or '0') or 0
before = math.max(math.ceil(cur - now), 0)
if pause > 0 then
  set = math.min(pause, maxpause)
  if now + set > cur then
    redis.call('SET', KEYS[5], string.format('%.0f', now + set), 'PX', math.ceil(set / 1000) + 1)
  end
end
wake_first(KEYS[3], ARGV[3])
local r1, r2, cuts = '0', '0', 0
if ai then r1, r2, cuts = string.format('%.17g', ai.r1), string.format('%.17g', ai.r2), ai.cuts end
return {echo and 1 or 0, set, before, r1, r2, cuts}
`

// leaveScript takes tickets that give up out of the room, waking the new
// first if the first left. KEYS: room, room leases. ARGV: the key's
// channel, then the ticket ids.
var leaveScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(roomPrelude + `
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
for i = 2, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZREM', KEYS[2], ARGV[i])
end
local now = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] and first[1] ~= now[1] then wake_first(KEYS[1], ARGV[1]) end
return 1
`)
})

// observeSrc lowers buckets to what rate-limit headers said remained
// and, for a key without explicit limits, publishes the limits they named.
//
// KEYS: state, learned, room. ARGV: age of the headers (s), mode ('t': the
// unseen charge is the cumulative charge minus the ticket's snapshot; 'p':
// the unseen charge is given), state TTL (ms), how long learned limits are
// kept (ms; 0: the key's limits are explicit, learn nothing), the key's
// channel, headroom, burst (s), then per bucket: rate, burst capacity, maximum, remaining
// (negative = unknown), snapshot or unseen charge, limit (per minute, 0 =
// unknown). A level becomes min(level, remaining + rate×age - unseen):
// never raised. A limit that differs from the learned one replaces it and
// bumps the learned version, waking the room's first ticket, and resets the
// rates learned from 429s. With learning it returns {version, h1..h4},
// else {}.
const observeSrc = `
local now = now_us()
local age, mode = tonumber(ARGV[1]), ARGV[2]
local keep, chan = tonumber(ARGV[4]), ARGV[5]
local hr, burst = tonumber(ARGV[6]), tonumber(ARGV[7])
local ai, b = load_learned(KEYS[2], now, 7, 6, hr, burst)
local on = ai ~= nil
for i = 1, 4 do
  local x = b[i]
  local o = 7 + (i - 1) * 6
  local rem, arg = tonumber(ARGV[o + 4]), tonumber(ARGV[o + 5])
  if x.rate > 0 and rem >= 0 then
    local unseen = arg
    if mode == 't' then unseen = x.cum - arg end
    x.level = math.min(x.level, rem + x.rate * age - unseen)
  end
end
save(now, b, tonumber(ARGV[3]))
if keep <= 0 then return {} end
local changed = false
for i = 1, 4 do
  local lim = tonumber(ARGV[7 + (i - 1) * 6 + 6])
  if lim > 0 and tonumber(redis.call('HGET', KEYS[2], 'h' .. i) or '0') ~= lim then
    redis.call('HSET', KEYS[2], 'h' .. i, string.format('%.17g', lim))
    changed = true
  end
end
if changed then
  redis.call('HINCRBY', KEYS[2], 'v', 1)
  if on then
    -- Headers describe the key now: no rates from 429s.
    aimd_reset(ai)
    aimd_save(KEYS[2], ai, keep)
  end
  wake_first(KEYS[3], chan)
end
redis.call('PEXPIRE', KEYS[2], keep)
local l = redis.call('HMGET', KEYS[2], 'v', 'h1', 'h2', 'h3', 'h4')
return {tonumber(l[1]) or 0, l[2] or '0', l[3] or '0', l[4] or '0', l[5] or '0'}
`

// pauseSrc stores the later of the current pause and now + ARGV[1] µs in
// KEYS[1] (expiring with it) and returns what remained of the pause before
// (µs, 0 if the key was not paused).
const pauseSrc = `
local now = now_us()
local d = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if now + d > cur then
  redis.call('SET', KEYS[1], string.format('%.0f', now + d), 'PX', math.ceil(d / 1000) + 1)
end
return math.max(math.ceil(cur - now), 0)
`

// renewSrc extends the leases of the tickets ARGV[2..] still in the
// in-flight set KEYS[1] to now + ARGV[1] µs. A ticket whose lease already
// expired (and was removed) is not brought back: its slot may be taken.
const renewSrc = `
local now = now_us()
local exp = string.format('%.0f', now + tonumber(ARGV[1]))
local args = {}
for i = 2, #ARGV do
  args[#args + 1] = exp
  args[#args + 1] = ARGV[i]
end
if #args > 0 then
  redis.call('ZADD', KEYS[1], 'XX', unpack(args))
  redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1]) / 1000) * 2)
end
return 1
`
