package redisbudget

import (
	"fmt"
	"strings"

	"github.com/llmrun/llmrun/limiter"
)

// The rates learned from 429s, shared. Where no rate-limit headers
// describe a key, the in-process limiter learns the request and token
// rates the server sustains from its 429s alone (limiter.AIMD: a ramp from
// the first answer, cuts just under what the server accepted between two
// 429s, a hold, then an additive probe). Across processes that must be one
// learner: each process measuring only its own share would measure a
// fraction of the server's rate, and each cutting on its own 429s would cut
// the key once per process. So the AIMD lives on the key, in the learned
// hash (fields a_*), and the scripts run it on Redis's clock: every
// admission is Sent, every end Answered, Failed or Unsent, every 429
// RateLimited, with the epoch and measurement a ticket was admitted in
// (its mark). It is limiter.AIMD transcribed, configured from
// limiter.SharedAIMD; TestSharedAIMDMatchesLimiter drives both with the
// same events.
//
// The rates govern the requests bucket and the combined-tokens bucket
// wherever they are below the limits described (explicit or from headers),
// as in package limiter: a bucket of rate r×headroom holding Burst of it,
// with no ceiling on a single request's size, and while the request rate
// is a guess (a ramp, a cut before any measurement) a capacity of one
// request. The AIMD runs only while the key's headers named no limit; when
// they do, it is reset.

// aimdFields are the AIMD's state, stored as a_<field>: started, ramping,
// fresh; the rates, peaks, increments, accepted, sent-this-step and
// binding flags of requests (1) and tokens (2); epoch, measurement, the
// measurement's start, the hold's end, the step's start (µs), the
// hint-less streak, the cuts and the smoothed answer latency (µs).
var aimdFields = []string{"st", "rp", "fr", "r1", "r2", "p1", "p2", "i1", "i2", "c1", "c2", "s1", "s2", "b1", "b2", "ep", "ms", "since", "hold", "step", "stk", "cuts", "rtt"}

// aimdPrelude returns the Lua of the shared AIMD configured by c.
func aimdPrelude(c limiter.AIMDConfig) string {
	var names, fields []string
	for _, f := range aimdFields {
		names = append(names, "'"+f+"'")
		fields = append(fields, "'a_"+f+"'")
	}
	us := func(d interface{ Microseconds() int64 }) int64 { return d.Microseconds() }
	return fmt.Sprintf(`
local AIMD = {start = %g, step = %d, hold = %d, margin = %g, decrease = %g, probe = %g,
  keep = %g, minsample = %d, burst = %d, grain = %d, bbase = %d, bmax = %d, perstep = %t}
local AIMD_NAMES = {%s}
local AIMD_FIELDS = {%s}
`, c.StartRate, us(c.Step), us(c.Hold), c.Margin, c.Decrease, c.Probe, c.ProbeKeep, us(c.MinSample), us(c.Burst), us(c.Grain),
		us(c.BackoffBase), us(c.BackoffMax), c.RampPerStep, strings.Join(names, ", "), strings.Join(fields, ", ")) + aimdLua
}

// aimdLua is limiter.AIMD's methods over the table a (see aimdFields).
// Times are µs of the server's clock, rates per second.
const aimdLua = `
-- aimd_on: the key's headers named no limit (learned hash h1..h4).
local function aimd_on(key)
  local h = redis.call('HMGET', key, 'h1', 'h2', 'h3', 'h4')
  for i = 1, 4 do
    if (tonumber(h[i]) or 0) > 0 then return false end
  end
  return true
end

local function aimd_load(key)
  local v = redis.call('HMGET', key, unpack(AIMD_FIELDS))
  local a = {}
  for i, f in ipairs(AIMD_NAMES) do a[f] = tonumber(v[i]) or 0 end
  return a
end

local function aimd_save(key, a, ttl_ms)
  local args = {}
  for i, f in ipairs(AIMD_NAMES) do
    args[#args + 1] = AIMD_FIELDS[i]
    args[#args + 1] = string.format('%.17g', a[f])
  end
  redis.call('HSET', key, unpack(args))
  if redis.call('PTTL', key) < ttl_ms then redis.call('PEXPIRE', key, ttl_ms) end
end

-- aimd_reset forgets the rates (headers now describe the key); the cuts
-- are kept, and tickets admitted before are echoes.
local function aimd_reset(a)
  local cuts, ep, ms = a.cuts, a.ep, a.ms
  for _, f in ipairs(AIMD_NAMES) do a[f] = 0 end
  a.cuts, a.ep, a.ms = cuts, ep + 1, ms + 1
end

local function aimd_start(a, now)
  if a.st == 0 then a.st, a.since, a.step, a.fr = 1, now, now, 1 end
end

-- aimd_steplen is stepLen: while ramping, the round trip (whole µs,
-- between the grain and the step; the step before any answer), unless
-- configured to ramp per step.
local function aimd_steplen(a)
  if AIMD.perstep or a.rp ~= 1 or a.rtt <= 0 then return AIMD.step end
  return math.min(math.max(math.floor(a.rtt), AIMD.grain), AIMD.step)
end

local function aimd_advance(a, now)
  if a.st == 0 then return end
  local len = aimd_steplen(a)
  local steps = math.floor((now - a.step) / len)
  if steps <= 0 then return end
  local stop = a.step + len
  local used = false
  for d = 1, 2 do
    local r = a['r' .. d]
    local b = r > 0 and a['s' .. d] >= 0.75 * r * len / 1e6
    a['b' .. d] = b and 1 or 0
    used = used or b
  end
  if not used then
  elseif a.rp == 1 then
    a.r1 = a.r1 * 2
  elseif stop >= a.hold then
    for d = 1, 2 do
      local r = a['r' .. d]
      if r > 0 and a['b' .. d] == 1 then
        r = r + a['i' .. d]
        a['r' .. d] = r
        local p = a['p' .. d]
        if p > 0 and r > p * (1 + 1e-9) then
          a['i' .. d] = math.min(a['i' .. d] * 2 ^ (AIMD.step / 1e6), r)
        end
      end
    end
  end
  a.step = a.step + steps * len
  a.s1, a.s2 = 0, 0
end

-- aimd_at: the key's AIMD advanced to now, or nil when its headers named
-- a limit (the AIMD is off).
local function aimd_at(key, now)
  if not aimd_on(key) then return nil end
  local a = aimd_load(key)
  aimd_advance(a, now)
  return a
end

local function aimd_unmeasured(a)
  return a.r1 > 0 and (a.rp == 1 or a.p1 == 0)
end

-- aimd_over returns the load() hook that puts the learned rates on the
-- requests (1) and combined-tokens (4) buckets where they are below the
-- described limits; hr is the headroom, burst the burst (s).
local function aimd_over(a, hr, burst)
  return function(i, x)
    local r
    if i == 1 then r = a.r1 elseif i == 4 then r = a.r2 else return end
    if r <= 0 then return end
    local desc = 0
    if x.rate > 0 then desc = x.rate / hr * 60 end
    local per = r * 60
    if desc > 0 and desc <= per then return end
    x.rate = per * hr / 60
    x.base = x.rate * burst
    if desc == 0 then x.max = 1e308 end
    x.aimd = true
    if i == 1 then
      if aimd_unmeasured(a) then x.base, x.paced = x.rate * AIMD.grain / 1e6, true end
      x.base = math.max(x.base, 1)
    end
  end
end

-- load_learned: the key's AIMD at now (nil: off) and the buckets, loaded
-- as load does, at the learned rates where aimd_over puts them.
local function load_learned(key, now, base, stride, hr, burst)
  local ai = aimd_at(key, now)
  return ai, load(now, base, stride, ai and aimd_over(ai, hr, burst) or nil)
end

local function aimd_sent(a, now, req, tok)
  aimd_start(a, now)
  aimd_advance(a, now)
  a.c1, a.c2 = a.c1 + req, a.c2 + tok
  a.s1, a.s2 = a.s1 + req, a.s2 + tok
end

local function aimd_ramp(a, now, latency)
  aimd_start(a, now)
  if latency > 0 then
    if a.rtt == 0 then a.rtt = latency else a.rtt = a.rtt + (latency - a.rtt) / 8 end
  end
  if a.r1 > 0 or a.p1 > 0 then return end
  a.rp = 1
  a.r1 = AIMD.start
  if latency > 0 then a.r1 = math.max(AIMD.start, 1e6 / latency) end
  a.step, a.s1, a.s2 = now, 0, 0
end

local function aimd_answered(a, ms, rtok, atok)
  a.stk = math.max(a.stk - 1, 0)
  if ms == a.ms then a.c2 = a.c2 + atok - rtok end
end

local function aimd_failed(a, ms, rtok)
  if ms == a.ms then a.c2 = a.c2 - rtok end
end

local function aimd_unsent(a, ms, req, tok)
  if ms == a.ms then a.c1, a.c2 = a.c1 - req, a.c2 - tok end
end

-- aimd_backoff is Backoff: the pause of a hint-less 429 on a described
-- key, of a ticket admitted in epoch ep; 0 for an echo (admitted before the
-- last backoff or cut).
local function aimd_backoff(a, ep)
  if ep ~= a.ep then return 0 end
  a.ep = a.ep + 1
  a.stk = a.stk + 1
  return math.min(AIMD.bbase * 2 ^ math.min(a.stk - 1, 30), AIMD.bmax)
end

-- aimd_cuts is cutDims: which rates a 429 naming named (0 nothing, 1
-- requests, 2 tokens) cuts.
local function aimd_cuts(a, named)
  if named == 1 then return {true, false} end
  if named == 2 then return {false, true} end
  local cut = {a.r1 > 0 and a.b1 == 1, a.r2 > 0 and a.b2 == 1}
  if not cut[1] and not cut[2] then cut = {a.r1 > 0, a.r2 > 0} end
  if not cut[1] and not cut[2] then cut = {true, false} end
  return cut
end

-- aimd_refused is RateLimitedOn: it returns whether the 429 is an echo of
-- the last cut, and the pause a 429 without a hint calls for (µs).
local function aimd_refused(a, now, ep, ms, req, tok, hinted, named)
  aimd_start(a, now)
  aimd_advance(a, now)
  if ep ~= a.ep then return true, 0 end
  if ms == a.ms then a.c1, a.c2 = a.c1 - req, a.c2 - tok end
  local span = now - a.since
  local n = a.c1
  local measured = n >= 2 and (a.fr == 1 or span >= AIMD.minsample)
  local cut = aimd_cuts(a, named)
  for d = 1, 2 do
    local r = a['r' .. d]
    local acc = a['c' .. d]
    if not cut[d] and a['p' .. d] == 0 then
      r = 0
    elseif not cut[d] then
    elseif measured and acc > 0 then
      local est = acc * (n + 0.5) / n / (span / 1e6)
      if a.fr == 1 then est = acc * (n + 0.5) / n / ((span + AIMD.burst) / 1e6) end
      if a.rp == 0 and a['b' .. d] == 1 then est = math.max(est, AIMD.keep * r) end
      a['p' .. d] = est
      local nr = (1 - AIMD.margin) * est
      if r > 0 then nr = math.min(nr, (1 - AIMD.margin) * r) end
      r = nr
    elseif r > 0 then
      r = r * AIMD.decrease
    end
    a['r' .. d] = r
    local base = a['p' .. d]
    if base == 0 then base = r end
    a['i' .. d] = AIMD.probe * base
  end
  a.rp = 0
  a.cuts = a.cuts + 1
  a.ep = a.ep + 1
  if measured then
    a.fr, a.ms, a.c1, a.c2, a.since = 0, a.ms + 1, 0, 0, now
  end
  a.hold = now + AIMD.hold
  a.step, a.s1, a.s2 = now, 0, 0
  local pause = 0
  if not hinted then
    a.stk = a.stk + 1
    pause = math.min(AIMD.bbase * 2 ^ math.min(a.stk - 1, 30), AIMD.bmax)
  end
  return false, pause
end
`
