package providers

import (
	"strconv"

	"github.com/llmrun/llmrun/internal/jsonw"
)

// Prompt is a simple input line: a prompt with an optional system text.
type Prompt struct {
	System    string
	Prompt    string
	Model     string
	MaxTokens int
	// CompletionTokens writes an OpenAI body's cap as
	// max_completion_tokens, the field reasoning models take (they refuse
	// max_tokens); other bodies keep max_tokens, whose bytes fingerprints
	// of earlier runs hashed.
	CompletionTokens bool
}

// Build shapes a simple prompt into a request body of format f.
//
// The check pass builds one body per input line, so the body is appended
// in one go rather than set field by field. Its bytes are exactly those the
// field-by-field build (sjson paths, encoding/json maps) made, because
// request fingerprints hash them and a different spelling would send every
// answered request again: members in that order, strings set at a path
// written as they are unless they need escaping (sjson's rule), strings of
// the message objects escaped as encoding/json does, HTML characters
// included (see appendJSONString), and the message objects' keys sorted.
func (p Prompt) Build(f Format) ([]byte, error) {
	return p.AppendBody(make([]byte, 0, 128+len(p.Prompt)+len(p.System)+len(p.Model)), f), nil
}

// AppendBody appends the body Build returns to dst: the model, then the
// members format f writes a prompt as (its row of formats).
func (p Prompt) AppendBody(dst []byte, f Format) []byte {
	b := append(dst, `{"model":`...)
	b = appendSJSONString(b, p.Model)
	members := f.rules().prompt
	if members == nil { // a format that declares none takes Chat Completions'
		members = appendOpenAIPrompt
	}
	return append(members(b, p), '}')
}

// appendGeminiPrompt appends the members of a generateContent body after
// its model.
func appendGeminiPrompt(b []byte, p Prompt) []byte {
	if p.System != "" {
		b = append(b, `,"systemInstruction":{"parts":[{"text":`...)
		b = appendSJSONString(b, p.System)
		b = append(b, `}]}`...)
	}
	b = append(b, `,"contents":[{"parts":[{"text":`...)
	b = AppendJSONString(b, p.Prompt)
	b = append(b, `}],"role":"user"}]`...)
	if p.MaxTokens > 0 {
		b = append(b, `,"generationConfig":{"maxOutputTokens":`...)
		b = strconv.AppendInt(b, int64(p.MaxTokens), 10)
		b = append(b, '}')
	}
	return b
}

// appendAnthropicPrompt appends the members of a Messages body after its
// model; max_tokens always, as the API requires it.
func appendAnthropicPrompt(b []byte, p Prompt) []byte {
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(p.MaxTokens), 10)
	if p.System != "" {
		b = append(b, `,"system":`...)
		b = appendSJSONString(b, p.System)
	}
	b = append(b, `,"messages":[{"content":`...)
	b = AppendJSONString(b, p.Prompt)
	return append(b, `,"role":"user"}]`...)
}

// appendOpenAIPrompt appends the members of a Chat Completions body after
// its model.
func appendOpenAIPrompt(b []byte, p Prompt) []byte {
	b = append(b, `,"messages":[`...)
	if p.System != "" {
		b = append(b, `{"content":`...)
		b = AppendJSONString(b, p.System)
		b = append(b, `,"role":"system"},`...)
	}
	b = append(b, `{"content":`...)
	b = AppendJSONString(b, p.Prompt)
	b = append(b, `,"role":"user"}]`...)
	if p.MaxTokens > 0 {
		if p.CompletionTokens {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, int64(p.MaxTokens), 10)
	}
	return b
}

// appendSJSONString appends s as sjson writes a string value: verbatim in
// quotes when it is printable ASCII without '"' or '\', else as
// encoding/json does.
func appendSJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > 0x7f || c == '"' || c == '\\' {
			return AppendJSONString(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendJSONString appends s as a JSON string exactly as encoding/json's
// Marshal does (HTML characters escaped too).
func AppendJSONString(b []byte, s string) []byte { return jsonw.AppendString(b, s, true) }
