package redisbudget

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrun/llmrun/limiter"
)

// aimdDriver runs a sequence of AIMD events with explicit times through the
// shared AIMD's Lua, in a state of its own (no keys): ARGV is events of six
// fields (kind, time µs, then four numbers); it returns, after each, the
// rates, whether a 429 was an echo, the pause it called for and whether the
// request rate is a guess. A 'backoff' is Backoff's 429: an echo when it
// calls for no pause.
func aimdDriver(c limiter.AIMDConfig) *redis.Script {
	return redis.NewScript(aimdPrelude(c) + aimdDriverLua)
}

const aimdDriverLua = `
local a = {}
for _, f in ipairs(AIMD_NAMES) do a[f] = 0 end
local marks, out = {}, {}
for i = 1, #ARGV, 6 do
  local kind, t = ARGV[i], tonumber(ARGV[i + 1])
  local x1, x2, x3, x4 = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5])
  local echo, pause = false, 0
  if kind == 'sent' then
    aimd_sent(a, t, x1, x2)
    marks[#marks + 1] = {a.ep, a.ms}
  elseif kind == 'unsent' then
    aimd_unsent(a, marks[x1][2], x2, x3)
  elseif kind == 'answered' then
    aimd_answered(a, marks[x1][2], x2, x3)
  elseif kind == 'failed' then
    aimd_failed(a, marks[x1][2], x2)
  elseif kind == 'refused' then
    echo, pause = aimd_refused(a, t, marks[x1][1], marks[x1][2], x2, x3, x4 % 2 == 1, math.floor(x4 / 2))
  elseif kind == 'backoff' then
    pause = aimd_backoff(a, marks[x1][1])
    echo = pause == 0
  elseif kind == 'ramp' then
    aimd_ramp(a, t, x1)
  end
  aimd_advance(a, t)
  local e, u = 0, 0
  if echo then e = 1 end
  if aimd_unmeasured(a) then u = 1 end
  out[#out + 1] = string.format('%.17g %.17g %d %.0f %d', a.r1, a.r2, e, pause, u)
end
return out
`

type aimdEvent struct {
	kind           string
	t              int64 // µs since the start
	x1, x2, x3, x4 int64
}

// aimdEvents draws a plausible life of a key: admissions, answers,
// failures, cancels and 429s (with and without a hint; now and then one
// that only backs off, as under limits given) of admitted attempts, the ramp from the first answer (every answer's latency feeds
// its round trip), and time passing. The server answers fast, mostly
// within a latency scale drawn for the life (under the 100ms Step, with a
// slow answer now and then), and the first 429 comes only after a quiet
// start of a quarter to a half of the life: the ramp runs long enough for
// its step, the round trip or the Step (RampPerStep), to matter. Only a
// ramp tells the two apart, and a ramp ends at the first cut: with 429s
// from the start and latencies up to 300ms (a round trip over the Step),
// one life in eight did.
func aimdEvents(rng *rand.Rand, n int) []aimdEvent {
	var (
		evs  []aimdEvent
		open []int64 // marks (1-based) of attempts not ended
		cost = map[int64]int64{}
		t    int64
		sent int64
	)
	quiet := n/4 + rng.IntN(n/4) // no 429 before this many events
	scale := 2_000 + rng.Int64N(60_000)
	answered := false
	latency := func() int64 {
		if !answered || rng.IntN(10) == 0 {
			// The first answer is slow (a new connection's handshakes):
			// the ramp starts low, at one request per latency, and has
			// room to double.
			answered = true
			return 100_000 + rng.Int64N(200_000)
		}
		return rng.Int64N(scale)
	}
	end := func() (int64, bool) {
		if len(open) == 0 {
			return 0, false
		}
		i := rng.IntN(len(open))
		m := open[i]
		open = append(open[:i], open[i+1:]...)
		return m, true
	}
	for len(evs) < n {
		if len(evs) < quiet {
			t += rng.Int64N(15_000) // sending fast: the ramp binds
		} else {
			t += rng.Int64N(40_000)
		}
		r := rng.IntN(100)
		if len(evs) < quiet && r >= 74 && r < 90 {
			r -= 40 // an answer instead of a 429
		}
		switch {
		case r < 40:
			sent++
			tok := 50 + rng.Int64N(150)
			cost[sent] = tok
			open = append(open, sent)
			evs = append(evs, aimdEvent{"sent", t, 1, tok, 0, 0})
		case r < 65:
			if m, ok := end(); ok {
				evs = append(evs, aimdEvent{"answered", t, m, cost[m], rng.Int64N(cost[m] + 50), 0})
				// Every answer on a key that learns: the first starts the
				// ramp, each feeds the round trip it doubles per.
				evs = append(evs, aimdEvent{"ramp", t, latency(), 0, 0, 0})
			}
		case r < 70:
			if m, ok := end(); ok {
				evs = append(evs, aimdEvent{"failed", t, m, cost[m], 0, 0})
			}
		case r < 74:
			if m, ok := end(); ok {
				evs = append(evs, aimdEvent{"unsent", t, m, 1, cost[m], 0})
			}
		case r < 88 && rng.IntN(8) == 0:
			if m, ok := end(); ok {
				// A hint-less 429 under limits given or described: the
				// backoff alone (it shares the epoch its echoes are told by).
				evs = append(evs, aimdEvent{"backoff", t, m, 0, 0, 0})
			}
		case r < 90:
			if m, ok := end(); ok {
				// x4: bit 0 hinted, then what it names (0 nothing,
				// 1 requests, 2 tokens).
				evs = append(evs, aimdEvent{"refused", t, m, 1, cost[m], rng.Int64N(2) + 2*rng.Int64N(3)})
			}
		default:
			t += rng.Int64N(2_000_000) // a quiet spell: steps and holds pass
			evs = append(evs, aimdEvent{"tick", t, 0, 0, 0, 0})
		}
	}
	return evs
}

// TestSharedAIMDMatchesLimiter: the shared AIMD's Lua and limiter.AIMD,
// driven by the same events at the same instants (429s naming requests,
// tokens or nothing), agree on the rates, the
// echoes, the pauses and whether the request rate is a guess, after every
// event: configured as the shared AIMD runs (a ramp per Step) and as the
// in-process one (per round trip), so the Lua stays a transcription. Every
// life must tell the two configurations apart (limiter.AIMD's rates differ
// between them at some event), so a Lua that ramped by the other one's
// step fails on every seed, not on one in eight.
func TestSharedAIMDMatchesLimiter(t *testing.T) {
	c := newClient(t)
	base := time.UnixMicro(1_700_000_000_000_000)
	configs := []struct {
		name string
		c    limiter.AIMDConfig
	}{{"shared", limiter.SharedAIMD}, {"in-process", limiter.DefaultAIMD}}
	for _, conf := range configs {
		driver := aimdDriver(conf.c)
		for seed := range uint64(8) {
			t.Run(fmt.Sprintf("%s/%d", conf.name, seed), func(t *testing.T) {
				compareAIMD(t, c, driver, conf.c, base, seed)
			})
		}
	}
	for seed := range uint64(8) {
		evs := aimdEvents(rand.New(rand.NewPCG(seed, 15)), 600)
		a, _ := playAIMD(configs[0].c, base, evs)
		b, _ := playAIMD(configs[1].c, base, evs)
		if slices.Equal(a, b) {
			t.Errorf("seed %d: the ramp per Step and per round trip give the same rates after every event: the life tells them apart nowhere", seed)
		}
	}
}

// aimdOutcome is what the comparison reads after each event: the rates
// (per second), whether a 429 was an echo, the pause it called for (µs)
// and whether the request rate is a guess.
type aimdOutcome struct {
	r1, r2 float64
	echo   bool
	pause  int64
	guess  bool
}

// agrees reports whether o and p agree up to float rounding.
func (o aimdOutcome) agrees(p aimdOutcome) bool {
	return same(o.r1, p.r1) && same(o.r2, p.r2) && o.echo == p.echo && o.pause == p.pause && o.guess == p.guess
}

// playAIMD drives a limiter.AIMD configured by conf with evs and returns
// the outcome after each, and how many 429s cut.
func playAIMD(conf limiter.AIMDConfig, base time.Time, evs []aimdEvent) ([]aimdOutcome, int) {
	a := limiter.NewAIMD(conf)
	var marks []limiter.AIMDMark
	out := make([]aimdOutcome, 0, len(evs))
	cuts := 0
	for _, e := range evs {
		now := base.Add(time.Duration(e.t) * time.Microsecond)
		var re limiter.AIMDReaction
		switch e.kind {
		case "sent":
			marks = append(marks, a.Sent(now, limiter.Cost{Requests: e.x1, Input: e.x2}))
		case "unsent":
			a.Unsent(marks[e.x1-1], limiter.Cost{Requests: e.x2, Input: e.x3})
		case "answered":
			a.Answered(marks[e.x1-1], limiter.Cost{Input: e.x2}, limiter.Cost{Input: e.x3})
		case "failed":
			a.Failed(marks[e.x1-1], limiter.Cost{Input: e.x2})
		case "refused":
			named := [...]limiter.Dimension{limiter.DimNone, limiter.DimRequests, limiter.DimTokens}[e.x4/2]
			re = a.RateLimitedOn(now, marks[e.x1-1], limiter.Cost{Requests: e.x2, Input: e.x3}, e.x4%2 == 1, named)
			if !re.Echo {
				cuts++
			}
		case "backoff":
			re.Pause = a.Backoff(marks[e.x1-1])
			re.Echo = re.Pause == 0
		case "ramp":
			a.Ramp(now, time.Duration(e.x1)*time.Microsecond)
		}
		r1, r2 := a.Rates(now)
		out = append(out, aimdOutcome{r1, r2, re.Echo, re.Pause.Microseconds(), a.Unmeasured()})
	}
	if a.Cuts() != int64(cuts) {
		cuts = -1 // the AIMD's own count disagrees: no proof of a cut
	}
	return out, cuts
}

// compareAIMD drives driver's Lua and a limiter.AIMD configured by conf
// with the events seed draws and fails at the first disagreement.
func compareAIMD(t *testing.T, c *redis.Client, driver *redis.Script, conf limiter.AIMDConfig, base time.Time, seed uint64) {
	evs := aimdEvents(rand.New(rand.NewPCG(seed, 15)), 600)
	args := make([]any, 0, 6*len(evs))
	for _, e := range evs {
		args = append(args, e.kind, base.UnixMicro()+e.t, e.x1, e.x2, e.x3, e.x4)
	}
	res, err := driver.Run(context.Background(), c, nil, args...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want, cuts := playAIMD(conf, base, evs)
	for i, e := range evs {
		f := strings.Fields(res[i])
		var got aimdOutcome
		got.r1, _ = strconv.ParseFloat(f[0], 64)
		got.r2, _ = strconv.ParseFloat(f[1], 64)
		got.echo = f[2] == "1"
		got.pause, _ = strconv.ParseInt(f[3], 10, 64)
		got.guess = f[4] == "1"
		if !got.agrees(want[i]) {
			w := want[i]
			t.Fatalf("event %d %+v: Lua rates %g %g echo %v pause %dµs guess %v; limiter.AIMD %g %g echo %v pause %dµs guess %v",
				i, e, got.r1, got.r2, got.echo, got.pause, got.guess, w.r1, w.r2, w.echo, w.pause, w.guess)
		}
	}
	if cuts <= 0 {
		t.Errorf("no cut in %d events (or a miscount): the comparison proved little", len(evs))
	}
}

// same reports whether two rates agree up to float rounding.
func same(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-12
}

// TestRatesFrom429sAreShared: where no headers describe a key, a 429 in
// one process cuts the key's rate for every process: another one's next
// Reserve runs at it, and an echo of the same congestion in a third
// process (a ticket admitted before the cut) cuts nothing more.
func TestRatesFrom429sAreShared(t *testing.T) {
	auto := limiter.Limits{Auto: true, Concurrency: 64}
	a, b, c := newBudget(t, auto), newBudget(t, auto), newBudget(t, auto)
	key := testKey(t)
	ctx := context.Background()
	cost := limiter.Cost{Requests: 1, Input: 100}
	reserve := func(bg *Budget) limiter.Ticket {
		t.Helper()
		tk, err := bg.Reserve(ctx, key, cost)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	late := reserve(c) // admitted before the cut: its 429 is an echo
	for range 10 {
		reserve(a).Settle(cost)
	}
	reserve(a).Refused(limiter.Refusal{}) // no hint: a measured cut
	sa := a.Stats()[0]
	if sa.RefusalRPM <= 0 || sa.RefusalTPM != 0 {
		t.Fatalf("after a 429 naming nothing: rates from 429s %v rpm, %v tpm; want the request rate (the ramp's, binding) alone", sa.RefusalRPM, sa.RefusalTPM)
	}
	late.Refused(limiter.Refusal{})
	tb := reserve(b)
	tb.Cancel()
	sb := b.Stats()[0]
	if sb.RefusalRPM != sa.RefusalRPM || sb.Effective.RPM != sa.RefusalRPM {
		t.Errorf("the other process: %v rpm from 429s (effective %v), want the first's %v", sb.RefusalRPM, sb.Effective.RPM, sa.RefusalRPM)
	}
	if sc := c.Stats()[0]; sc.RefusalRPM != sa.RefusalRPM {
		t.Errorf("after an echo: %v rpm, want %v (unchanged)", sc.RefusalRPM, sa.RefusalRPM)
	}
	// Headers naming limits take over: the rates from 429s are dropped.
	tk := reserve(b)
	tk.Observe(limiter.Observation{Requests: limiter.Window{Limit: 600, Remaining: 500}}, time.Now())
	tk.Settle(cost)
	reserve(a).Cancel()
	if s := a.Stats()[0]; s.RefusalRPM != 0 || s.Effective.RPM != 600 {
		t.Errorf("after headers: %v rpm from 429s, effective %v; want 0 and 600", s.RefusalRPM, s.Effective.RPM)
	}
}
