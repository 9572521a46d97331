package budgettest

import "github.com/llmrun/llmrun/limiter"

// A burst of 429s of attempts admitted before the first one's cut (echoes:
// the server was answering requests already in flight) neither cuts the
// rates learned from 429s again nor lengthens the backoff; a hint still
// pauses for what it says. Nothing describes the key (no limits, no
// headers), so every 429 is bare and the AIMD learns from it.
//
// a..f are admitted at 0. a's 429 at 1s (hint 2s) is the first measured
// cut: 5 accepted over 1s plus the 1s Burst, (5+½)/5 × 5/2s = 2.75/s, less
// the 5% margin: 2.6125/s, 156.75/min; the key pauses until 3s. b's, c's
// and d's 429s are echoes: no cut, no backoff (c names tokens: still an
// echo). g is admitted at 3s, after the cut; its hint-less 429 cuts
// (unmeasured: 0.7×) and pauses for the backoff's base, 250ms. e's (older
// still) and h's (admitted between the two cuts) are echoes of that cut:
// the pause stays 250ms, where counting them would have made it 1s.
func refusedEchoes() Scenario {
	bare := limiter.Refusal{}
	return Scenario{Name: "429 echoes", AIMD: true, Config: Config{}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Reserve("b", req()), "admitted"},
		{0, Reserve("c", req()), "admitted"},
		{0, Reserve("d", req()), "admitted"},
		{0, Reserve("e", req()), "admitted"},
		{0, Reserve("f", req()), "admitted"},
		{sec, Refused("a", hint(2*sec)), "ok"},
		{sec, Refused("b", bare), "ok"},
		{sec, Refused("c", limiter.Refusal{Dimension: limiter.DimTokens}), "ok"},
		{1500 * ms, Refused("d", bare), "ok"},
		{1500 * ms, Stats(), "inflight=2 waiting=0 reservations=6 429=4 overloaded=0 clamped=0 paused=3s learned=false limits=156.75/0/0/0"},
		{1500 * ms, Reserve("g", req()), "wait 1.5s"},
		{3 * sec, Reserve("g", req()), "admitted"},
		{3 * sec, Reserve("h", req()), "admitted"},
		{3 * sec, Refused("g", bare), "ok"},
		{3 * sec, Refused("e", bare), "ok"},
		{3 * sec, Refused("h", bare), "ok"},
		{3 * sec, Stats(), "inflight=1 waiting=0 reservations=8 429=7 overloaded=0 clamped=0 paused=3.25s learned=false limits=109.72499999999998/0/0/0"}, // 0.7 × 156.75, in floats
		{3 * sec, Refused("f", hint(sec)), "ok"}, // an echo's hint still pauses
		{3 * sec, Stats(), "inflight=0 waiting=0 reservations=8 429=8 overloaded=0 clamped=0 paused=4s learned=false limits=109.72499999999998/0/0/0"}, // 0.7 × 156.75, in floats
	}}
}

// The same with limits given (10 requests/s): a 429 is a calibration, no
// rate is learned, and one without a hint pauses the key for the backoff,
// 250ms doubling per 429 without a success between. Its echoes (b, c, d:
// admitted before the backoff they echo) double nothing; counted, they
// made the pause 250ms, 500ms, 1s, 2s.
func refusedEchoesDescribed() Scenario {
	bare := limiter.Refusal{}
	return Scenario{Name: "429 echoes, limits given", Config: Config{Limits: limiter.Limits{RPM: 600}}, Steps: []Step{
		{0, Reserve("a", req()), "admitted"},
		{0, Reserve("b", req()), "admitted"},
		{0, Reserve("c", req()), "admitted"},
		{0, Reserve("d", req()), "admitted"},
		{sec, Refused("a", bare), "ok"},
		{sec, Refused("b", bare), "ok"},
		{sec, Refused("c", bare), "ok"},
		{sec, Stats(), "inflight=1 waiting=0 reservations=4 429=3 overloaded=0 clamped=0 paused=1.25s learned=false limits=600/0/0/0"},
		{sec, Reserve("e", req()), "wait 250ms"},
		{1250 * ms, Reserve("e", req()), "admitted"},
		{1250 * ms, Refused("e", bare), "ok"}, // admitted after a's backoff: doubled
		{1250 * ms, Refused("d", bare), "ok"}, // an echo of a's
		{1250 * ms, Stats(), "inflight=0 waiting=0 reservations=5 429=5 overloaded=0 clamped=0 paused=1.75s learned=false limits=600/0/0/0"},
		{1750 * ms, Reserve("f", req()), "admitted"},
		{1750 * ms, Settle("f", req()), "ok"}, // a success undoes one doubling
		{1750 * ms, Reserve("g", req()), "admitted"},
		{1750 * ms, Refused("g", bare), "ok"}, // and g's 429 redoes it: 500ms
		{1750 * ms, Stats(), "inflight=0 waiting=0 reservations=7 429=6 overloaded=0 clamped=0 paused=2.25s learned=false limits=600/0/0/0"},
	}}
}
