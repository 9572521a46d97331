package providers

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// ChargeRule is what a server's token counter takes for one request: the
// rule a remaining-tokens header's drops reveal, whatever the provider's
// documentation says.
type ChargeRule uint8

const (
	// ChargeUnknown: the headers have not told yet.
	ChargeUnknown ChargeRule = iota
	// ChargeInput: the counter takes the input tokens only.
	ChargeInput
	// ChargeOutput: input plus the output actually generated (counted as
	// it is produced), which llmrun covers by reserving the expected
	// output.
	ChargeOutput
	// ChargeCap: input plus the whole max_tokens at admission (Azure
	// OpenAI's documented rule), kept whatever the answer's length.
	ChargeCap
)

func (c ChargeRule) String() string {
	switch c {
	case ChargeInput:
		return "input only"
	case ChargeOutput:
		return "input + generated output"
	case ChargeCap:
		return "input + max_tokens"
	}
	return "unknown"
}

// Reserve is the output reservation that covers what the rule charges:
// the cap for ChargeCap, else the expected output (on a counter that takes
// input only, reserving the expected output as well costs a little budget
// and never a 429).
func (c ChargeRule) Reserve() OutputRule {
	if c == ChargeCap {
		return ReserveCap
	}
	return ReserveExpected
}

// Learner thresholds: a rule is adopted once it explains chargeVotes
// intervals between readings and at least chargeShare of those that
// told the rules apart; a learner that has read chargeReadings readings
// without deciding gives up (the counter is too noisy or too idle to
// tell).
const (
	chargeVotes    = 8
	chargeShare    = 0.75
	chargeReadings = 96
)

// ChargeLearner finds which ChargeRule explains the successive readings of
// one key's remaining-tokens counter: between two readings, the counter
// refills by its limit per minute and drops
// by what the requests the server admitted in between were charged, by
// each rule. Each interval votes for the rule that predicts the second
// reading best, if the rules' predictions differ by more than the
// reading's noise (intervals in which the counter may have filled up,
// reaching the fullest level seen, or emptied to 0, tell nothing); several requests in flight between two readings are
// summed, so concurrency does not confuse it. It is a pure value: the
// caller serializes calls and passes every instant explicitly.
type ChargeLearner struct {
	reqs  map[uint64]*chargeReq
	reads []chargeReading
	// next is the index in reads (sorted) of the first reading not yet
	// the end of an evaluated interval; full is the highest remaining seen.
	next  int
	full  int64
	votes [ChargeCap + 1]int
	// refuted counts, per rule, the intervals whose drop was smaller
	// than the rule's charges (see vote).
	refuted [ChargeCap + 1]int
	// Noise is the counter's resolution: predictions closer than this are
	// not told apart (Anthropic rounds remaining to the thousand); 0 uses
	// 2 tokens.
	Noise int64
	// OutputOnly says the counter is an output-tokens one (Anthropic's):
	// no rule charges it the input.
	OutputOnly bool
	gaveUp     bool
}

type chargeReq struct {
	sent, done   time.Time
	in, out, cap int64
	ended        bool
	charged      bool
}

type chargeReading struct {
	at               time.Time
	remaining, limit int64
}

// NewChargeLearner returns a learner with nothing read.
func NewChargeLearner() *ChargeLearner {
	return &ChargeLearner{reqs: make(map[uint64]*chargeReq)}
}

// Sent records request id admitted at instant at, with its input estimate
// and output cap (max_tokens).
func (l *ChargeLearner) Sent(id uint64, at time.Time, in, cap int64) {
	l.reqs[id] = &chargeReq{sent: at, in: in, cap: cap}
}

// Ended records request id's fate: sent at sent (the instant the server
// admitted it, as near as the client knows), done at done, its input as
// the usage reported it (or the estimate when none) and its output;
// charged is false when the server refused it (429) or it was never sent,
// so no counter took anything.
func (l *ChargeLearner) Ended(id uint64, sent, done time.Time, in, out int64, charged bool) {
	q := l.reqs[id]
	if q == nil {
		return
	}
	if !sent.IsZero() {
		q.sent = sent
	}
	q.done, q.in, q.out, q.ended, q.charged = done, in, out, true, charged
}

// Reading records a remaining-tokens header read at instant at, with the
// counter's per-minute limit (the limit header; readings without one are
// of no use).
func (l *ChargeLearner) Reading(at time.Time, remaining, limit int64) {
	if remaining < 0 || limit <= 0 || l.gaveUp {
		return
	}
	l.reads = append(l.reads, chargeReading{at: at, remaining: remaining, limit: limit})
	l.full = max(l.full, remaining)
}

// Decide evaluates the intervals whose requests have all ended and returns
// the rule adopted, ChargeUnknown while undecided; done reports that the
// learner has decided or given up, so the caller can stop feeding it.
func (l *ChargeLearner) Decide() (rule ChargeRule, done bool) {
	if l.gaveUp {
		return ChargeUnknown, true
	}
	pending := l.earliestPending()
	slices.SortStableFunc(l.reads[l.next:], func(a, b chargeReading) int { return a.at.Compare(b.at) })
	for l.next+1 < len(l.reads) && l.reads[l.next+1].at.Before(pending) {
		l.vote(l.reads[l.next], l.reads[l.next+1])
		l.next++
	}
	if r := l.winner(); r != ChargeUnknown {
		return r, true
	}
	if len(l.reads) >= chargeReadings || len(l.reqs) >= 4*chargeReadings {
		l.gaveUp = true
		l.reqs, l.reads = nil, nil
		return ChargeUnknown, true
	}
	return ChargeUnknown, false
}

// earliestPending is the send instant of the earliest request not yet
// ended: no interval reaching past it can be judged, since whether the
// server charged that request is not known yet.
func (l *ChargeLearner) earliestPending() time.Time {
	t := time.Unix(math.MaxInt32, 0)
	for _, q := range l.reqs {
		if !q.ended && q.sent.Before(t) {
			t = q.sent
		}
	}
	return t
}

// vote lets the interval (a, b] judge the rules. Where the counter cannot
// have filled up in between, it votes for the rule whose prediction of b
// is nearest, if clearly nearer than the others. Where it may have, the
// refill it had is not known, only bounded: the counter dropped by at
// most a's remaining plus a full refill minus b's, so a rule charging
// more than that is refuted (a server charging far less than max_tokens
// keeps its counter full while the client reserves the cap).
func (l *ChargeLearner) vote(a, b chargeReading) {
	if a.remaining == 0 || b.remaining == 0 {
		return // floored at 0: the counter's level is not known
	}
	start := float64(a.remaining) + float64(a.limit)/60*b.at.Sub(a.at).Seconds()
	drop := l.drops(a.at, b.at)
	noise := float64(max(l.Noise, 2))
	if start >= float64(l.full) {
		for r := ChargeInput; r <= ChargeCap; r++ {
			if drop[r] > start-float64(b.remaining)+2*noise {
				l.refuted[r]++
			}
		}
		return
	}
	best, bestErr, second := ChargeUnknown, math.Inf(1), math.Inf(1)
	for r := ChargeInput; r <= ChargeCap; r++ {
		e := math.Abs(start - drop[r] - float64(b.remaining))
		switch {
		case e < bestErr:
			best, bestErr, second = r, e, bestErr
		case e < second:
			second = e
		}
	}
	if second-bestErr > 2*noise {
		l.votes[best]++
	}
}

// drops is what each rule says the counter was charged in (a, b].
func (l *ChargeLearner) drops(a, b time.Time) (drop [ChargeCap + 1]float64) {
	for _, q := range l.reqs {
		if !q.charged {
			continue
		}
		input := q.in
		if l.OutputOnly {
			input = 0
		}
		if in(q.sent, a, b) {
			drop[ChargeInput] += float64(input)
			drop[ChargeOutput] += float64(input)
			drop[ChargeCap] += float64(input + max(q.cap, q.out))
		}
		if in(q.done, a, b) {
			drop[ChargeOutput] += float64(q.out)
		}
	}
	return drop
}

// in reports whether t falls in (a, b].
func in(t, a, b time.Time) bool { return t.After(a) && !t.After(b) }

// winner is the rule with enough votes and a clear share of them; else
// input + generated output where the votes split between it and input
// only; else,
// when the counter refuted the max_tokens charge often and seldom voted
// for it, the larger of the other rules it has not refuted as often (the
// counter stayed full, so which of them it is cannot be told, and the
// larger one is the safe reservation).
func (l *ChargeLearner) winner() ChargeRule {
	total := 0
	for _, v := range l.votes {
		total += v
	}
	for r, v := range l.votes {
		if v >= chargeVotes && float64(v) >= chargeShare*float64(total) {
			return ChargeRule(r)
		}
	}
	// The two rules that do not charge max_tokens differ by an answer's
	// output, less than the refill a client's stamps misplace by a few ms
	// on a loaded machine: votes split evenly between them still say
	// clearly that the cap is not charged, and the larger one is the safe
	// reservation.
	in, out := l.votes[ChargeInput], l.votes[ChargeOutput]
	if n := float64(in + out); in+out >= chargeVotes && n >= chargeShare*float64(total) && float64(max(in, out)) < chargeShare*n {
		return ChargeOutput
	}
	if n := l.refuted[ChargeCap]; n >= chargeVotes && l.votes[ChargeCap]*4 < n {
		if l.refuted[ChargeOutput]*4 < n {
			return ChargeOutput
		}
		if l.refuted[ChargeInput]*4 < n {
			return ChargeInput
		}
	}
	return ChargeUnknown
}

// Tight max_tokens note: once a key whose requests reserve their whole
// max_tokens has tightAnswers answers averaging under tightShare of it,
// the run says so once.
const (
	tightAnswers = 50
	tightShare   = 0.25
)

// ChargeCounter is the window whose drops the learner reads: the combined
// tokens counter, else (Anthropic) the output tokens one, the counter a
// max_tokens charge would show in; output reports the latter.
func ChargeCounter(l RateLimits) (w Window, output bool) {
	if l.Tokens.Known() && !l.InputTokens.Known() {
		return l.Tokens, false
	}
	return l.OutputTokens, true
}

// TightNote is the note on answers much shorter than the max_tokens each
// reserves, and whether it is due.
func TightNote(answers int, outSum, capSum, outMax int64) (string, bool) {
	if answers < tightAnswers || float64(outSum) >= tightShare*float64(capSum) {
		return "", false
	}
	mean, capMean := outSum/int64(answers), capSum/int64(answers)
	suggest := int64(math.Ceil(float64(outMax)*1.25/50)) * 50
	return fmt.Sprintf("answers average %d output tokens, %.0f%% of the max_tokens %d each request reserves (%d answers): the run holds token budget it never uses; a max_tokens of about %d would cover every answer so far",
		mean, 100*float64(outSum)/float64(capSum), capMean, answers, suggest), true
}
