package providers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// formatRules is what llmrun knows of the bodies of one wire format
// beyond its client: where its conversation is, what it requires and how
// its requests are checked. Code outside providers asks a Format (its
// methods below) and never compares formats.
type formatRules struct {
	// turns is the member holding the conversation, turn one entry of it.
	turns, turn string
	// requiredMaxTokens is the cap a body gets when it sets none, for a
	// format that requires one (Anthropic's Messages); 0 for none.
	requiredMaxTokens int
	// completionTokens says the format has max_completion_tokens beside
	// max_tokens (the field OpenAI's reasoning models take).
	completionTokens bool
	// checkEmbeddings rejects an embeddings body the API would refuse;
	// nil checks it as OpenAI's embeddings request.
	checkEmbeddings func(body []byte) error
	// chat and embeddings are the format's conversions to and from the
	// pivot (pivot.go); zero for none.
	chat, embeddings pivotConv
	// prompt appends the members a simple prompt becomes after the body's
	// model (Prompt.AppendBody); fingerprints hash these bytes.
	prompt func(b []byte, p Prompt) []byte
	// ramp is how the format words a refusal for acceleration (a sharp
	// increase) rather than for the rate; zero when it documents none.
	ramp rampWords
}

// formats holds each format's rules, indexed by Format; a read-only table.
var formats = [...]formatRules{
	FormatOpenAI: {
		turns: "messages", turn: "message", completionTokens: true,
		chat: identity, embeddings: identity,
		prompt: appendOpenAIPrompt,
		ramp:   rampWords{code: "slow_down"}, // as a 429 or a 503
	},
	FormatAnthropic: {
		turns: "messages", turn: "message", requiredMaxTokens: DefaultMaxTokens,
		chat:   pivotConv{toPivot: anthropicToPivot, fromPivot: anthropicFromPivot},
		prompt: appendAnthropicPrompt,
		ramp:   rampWords{typ: "rate_limit_error", message: "acceleration limit"},
	},
	FormatGemini: {
		turns: "contents", turn: "turn", checkEmbeddings: CheckGeminiEmbeddings,
		chat:       pivotConv{toPivot: geminiToPivot, fromPivot: geminiFromPivot},
		embeddings: pivotConv{toPivot: geminiEmbeddingsToPivot, fromPivot: geminiEmbeddingsFromPivot},
		prompt:     appendGeminiPrompt, // and no ramp: Gemini documents none (wire-formats)
	},
}

// formatOf is f's row of formats, if f is a known format.
func formatOf(f Format) (*formatRules, bool) {
	if int(f) < len(formats) && formats[f].turns != "" {
		return &formats[f], true
	}
	return nil, false
}

// rules is f's row of formats; an unknown format has Chat Completions'.
func (f Format) rules() *formatRules {
	if r, ok := formatOf(f); ok {
		return r
	}
	return &formats[FormatOpenAI]
}

// RequiredMaxTokens is the output cap a body of format f must carry when
// nothing sets one (Anthropic's Messages requires max_tokens); 0 when the
// format requires none.
func (f Format) RequiredMaxTokens() int { return f.rules().requiredMaxTokens }

// TakesCompletionTokens reports whether bodies of format f may write
// their cap as max_completion_tokens (Chat Completions), which some model
// families require.
func (f Format) TakesCompletionTokens() bool { return f.rules().completionTokens }

// rampWords are how a format words a refusal for acceleration: an error
// code, or an error type whose message names the limit.
type rampWords struct{ code, typ, message string }

// IsRamp reports whether pe, an error of format f, refuses a sharp
// increase in traffic (an acceleration limit), whatever the limits.
func (f Format) IsRamp(pe *Error) bool {
	w := f.rules().ramp
	if w.code != "" && pe.Code == w.code {
		return true
	}
	return w.typ != "" && pe.Type == w.typ && strings.Contains(strings.ToLower(pe.Message), w.message)
}

// CheckBody rejects a body of format f its endpoint would answer with a
// 400 for want of what it is about: messages (Gemini's contents), an
// input, inputs to embed.
func CheckBody(body []byte, ep Endpoint, f Format) error {
	switch ep {
	case EndpointResponses:
		in := gjson.GetBytes(body, "input")
		if (in.Type != gjson.String || in.Str == "") && !(in.IsArray() && len(in.Array()) > 0) {
			return errors.New("a /v1/responses request needs an input: a non-empty string or array")
		}
		return nil
	case EndpointEmbeddings:
		if check := f.rules().checkEmbeddings; check != nil {
			return check(body)
		}
		return checkEmbeddingsInput(body)
	}
	return CheckTurns(body, f)
}

// checkEmbeddingsInput rejects an OpenAI embeddings body without input
// or with an empty one.
func checkEmbeddingsInput(body []byte) error {
	in := gjson.GetBytes(body, "input")
	switch {
	case in.Type == gjson.String && in.Str != "":
		return nil
	case !in.IsArray() || len(in.Array()) == 0:
		return errors.New("a /v1/embeddings request needs an input: a non-empty string or array")
	}
	for i, x := range in.Array() {
		if x.Type == gjson.String && x.Str == "" || x.IsArray() && len(x.Array()) == 0 {
			return fmt.Errorf("input[%d] of an embeddings request is empty", i)
		}
	}
	return nil
}
