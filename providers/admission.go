package providers

import (
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Admission is a provider's rate-limit accounting: what one request
// reserves before it is sent, and what of its response's usage settles
// against the input budget. Each registry entry supplies one, so the runner
// applies a provider's rules without knowing which provider it is. The
// zero value is OpenAI Chat Completions' rules.
type Admission struct {
	// Text returns the text of a request a tokenizer should count for the
	// input budget; nil reads a chat body's system and message contents
	// (MessagesText).
	Text func(req *Request) []byte
	// Output is what a request reserves against the output budget.
	Output OutputRule
	// Charge is what the provider documents its token counter charges,
	// ChargeUnknown when it does not say: with ChargeCap an answer
	// settles its whole max_tokens, as the server keeps it. The run checks
	// it against the remaining-tokens headers and adopts what they show
	// (runner/charge.go).
	Charge ChargeRule
	// Charged returns the input tokens of a response that count against the
	// provider's input limit; nil counts them all.
	Charged func(u Usage) int64
	// DayZone is the time zone whose midnight resets the provider's daily
	// limits (Gemini's: Pacific time), and in which --rpd and --tpd count
	// calendar days; nil, or nil returned, is the local zone. A function,
	// so the zone is loaded by the runs that count days, not at start-up.
	DayZone func() *time.Location
}

// OutputRule says what a request reserves against the output budget.
type OutputRule uint8

const (
	// ReserveCap reserves the request's output cap (OutputCap): providers
	// that count max_tokens against the limit at admission (OpenAI).
	ReserveCap OutputRule = iota
	// ReserveExpected reserves the output the key is expected to produce
	// (the recent p95 of its outputs, at most the cap): providers that
	// count generated tokens only (Anthropic, Azure OpenAI).
	ReserveExpected
)

// DefaultOutputReserve is the output cap of a request that sets none.
const DefaultOutputReserve = 1024

// PromptText returns the text of req a tokenizer should count: Text's,
// else what the request's endpoint reads as its prompt (a chat body's
// messages, a Responses body's instructions and input, an embeddings
// body's inputs).
func (a Admission) PromptText(req *Request) []byte {
	switch {
	case a.Text != nil:
		return a.Text(req)
	case req.Endpoint == EndpointResponses:
		return ResponsesText(req.Body)
	case req.Endpoint == EndpointEmbeddings:
		return EmbeddingsText(req.Body)
	}
	return MessagesText(req.Body)
}

// OutputCap is the most output req can produce: its max_tokens, or
// DefaultOutputReserve when it sets none; 0 for an embeddings request,
// which produces no output tokens and reserves none, whatever Output says.
func (a Admission) OutputCap(req *Request) int64 {
	if req.Endpoint == EndpointEmbeddings {
		return 0
	}
	if req.MaxTokens > 0 {
		return int64(req.MaxTokens)
	}
	return DefaultOutputReserve
}

// InputCharged returns the input tokens of u that count against the input
// budget.
func (a Admission) InputCharged(u Usage) int64 {
	if a.Charged != nil {
		return a.Charged(u)
	}
	return u.InputTokens
}

// UncachedInput is Anthropic's input-limit rule: cache reads do not count
// toward input tokens per minute, uncached input and cache writes do.
func UncachedInput(u Usage) int64 { return max(u.InputTokens-u.CacheReadTokens, 0) }

// MessagesText gathers the text of a chat body (OpenAI Chat Completions or
// Anthropic Messages) that a tokenizer should count: the system prompt and
// the message contents, strings or text blocks.
func MessagesText(body []byte) []byte {
	// One walk of the top level over a view of body (no copy of it; every
	// text is copied into b), and b sized once: the prompt is part of the
	// body. This runs for every request, before its admission.
	var system, messages gjson.Result
	gjson.Parse(view(body)).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "system":
			if !system.Exists() { // the first of duplicates, as gjson.Get
				system = v
			}
		case "messages":
			if !messages.Exists() {
				messages = v
			}
		}
		return true
	})
	b := appendText(make([]byte, 0, len(body)), system)
	messages.ForEach(func(_, m gjson.Result) bool {
		b = appendText(b, m.Get("content"))
		return true
	})
	return b
}

// view is b as a string without a copy; the string must not outlive b
// nor be kept by the callee.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// appendText appends the text of a content, a string or parts with a
// string "text" (every format's text part has one), a line each.
func appendText(b []byte, v gjson.Result) []byte {
	if v.Type == gjson.String {
		return append(append(b, v.Str...), '\n')
	}
	v.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String {
			b = append(append(b, t.Str...), '\n')
		}
		return true
	})
	return b
}
