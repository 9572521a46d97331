package redisbudget

import "github.com/redis/go-redis/v9"

// The Lua scripts. Every script reads the clock with redis.call('TIME'), so
// the clocks of the machines sharing a budget do not matter: callers only
// ever pass durations (lease, skew, the age of a header, a pause), never
// instants.
//
// A key's state is one hash, KEYS[1] = llmrun:{key}:state, with fields
//
//	t      instant (µs, server clock) the levels were last refilled to
//	l1..l4 bucket levels (requests, input, output, combined tokens); an
//	       absent level is a full bucket
//	g1..g4 largest single cost seen per bucket (capacity never below it)
//	c1..c4 cumulative net charge per bucket (admissions plus
//	       reconciliation), what Ticket.Observe subtracts from
//
// Bucket parameters (refill rate per second with headroom applied, burst
// capacity, largest admissible cost) come from the caller on every call:
// every process sharing a key must configure the same limits.

// prelude defines the helpers shared by the scripts. base is the ARGV index
// before bucket 1's parameters; each bucket has stride parameters, the first
// three being rate, burst capacity and maximum.
const prelude = `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function load(now, base, stride)
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
`

// reserveScript admits a cost or says how long to wait.
//
// KEYS: state, in-flight set, pause. ARGV: ticket id, lease (µs),
// concurrency limit (0 = none), skew (s), state TTL (ms), then per bucket:
// rate, burst capacity, maximum, amount.
//
// It refills the buckets to the server's now and raises a capacity to a
// cost larger than the burst (topping a full bucket up, as the in-process
// limiter does). If the key is paused or a bucket does not hold the cost
// plus its skew margin it takes nothing and returns {0, wait µs, dimension}
// (the longest wait: pause or bucket). If the concurrency limit is reached
// (leases past their expiry do not count) it returns {0, 0, 5}. Otherwise
// it takes the cost from every bucket at once, adds the ticket to the
// in-flight set with the lease and returns {1, cum1..cum4}: the cumulative
// charges right after this admission, as strings.
var reserveScript = redis.NewScript(prelude + `
local now = now_us()
local id, lease, conc = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local skew, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local b = load(now, 5, 4)
local amount = {}
for i = 1, 4 do
  local x = b[i]
  local a = tonumber(ARGV[5 + (i - 1) * 4 + 4])
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
    if a > 0 then need = math.min(a + x.rate * skew, math.max(x.cap, a)) end
    local short = need - x.level
    if short > 1e-6 then
      local d = math.max(math.ceil(short / x.rate * 1e6), 1)
      if d > wait or dim == 0 then wait, dim = d, i end
    end
  end
end
if dim ~= 0 then
  save(now, b, ttl)
  return {0, wait, dim}
end

if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', now))
  if redis.call('ZCARD', KEYS[2]) >= conc then
    save(now, b, ttl)
    return {0, 0, 5}
  end
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
return out
`)

// finishScript ends a ticket: it reconciles the buckets and frees the slot.
//
// KEYS: state, in-flight set. ARGV: ticket id, state TTL (ms), then per
// bucket: rate, burst capacity, maximum, delta. A positive delta
// (over-reservation, or what a failed or cancelled attempt returns) is
// refunded up to the capacity; a negative one (under-reservation) is
// charged, possibly making the level negative. The cumulative charge moves
// by -delta.
var finishScript = redis.NewScript(prelude + `
local now = now_us()
local b = load(now, 2, 4)
for i = 1, 4 do
  local x = b[i]
  local d = tonumber(ARGV[2 + (i - 1) * 4 + 4])
  if x.rate > 0 and d ~= 0 then
    if d > 0 then
      x.level = math.max(x.level, math.min(x.level + d, x.cap))
    else
      x.level = x.level + d
    end
    x.cum = x.cum - d
  end
end
save(now, b, tonumber(ARGV[2]))
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// observeScript lowers buckets to what rate-limit headers said remained.
//
// KEYS: state. ARGV: age of the headers (s), mode ('t': the unseen charge
// is the cumulative charge minus the ticket's snapshot; 'p': the unseen
// charge is given), state TTL (ms), then per bucket: rate, burst capacity,
// maximum, remaining (negative = unknown), snapshot or unseen charge.
// A level becomes min(level, remaining + rate×age - unseen): never raised.
var observeScript = redis.NewScript(prelude + `
local now = now_us()
local age, mode = tonumber(ARGV[1]), ARGV[2]
local b = load(now, 3, 5)
for i = 1, 4 do
  local x = b[i]
  local o = 3 + (i - 1) * 5
  local rem, arg = tonumber(ARGV[o + 4]), tonumber(ARGV[o + 5])
  if x.rate > 0 and rem >= 0 then
    local unseen = arg
    if mode == 't' then unseen = x.cum - arg end
    x.level = math.min(x.level, rem + x.rate * age - unseen)
  end
end
save(now, b, tonumber(ARGV[3]))
return 1
`)

// pauseScript stores the later of the current pause and now + ARGV[1] µs in
// KEYS[1] (expiring with it) and returns what remained of the pause before
// (µs, 0 if the key was not paused).
var pauseScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local d = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if now + d > cur then
  redis.call('SET', KEYS[1], string.format('%.0f', now + d), 'PX', math.ceil(d / 1000) + 1)
end
return math.max(math.ceil(cur - now), 0)
`)

// renewScript extends the leases of the tickets ARGV[2..] still in the
// in-flight set KEYS[1] to now + ARGV[1] µs. A ticket whose lease already
// expired (and was removed) is not brought back: its slot may be taken.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
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
`)
