package providers

import (
	"errors"

	"github.com/tidwall/gjson"
)

// maxTokenFields are where the formats put a request's output cap: Chat
// Completions (both names), Anthropic, Responses, and Gemini's generationConfig, which
// its REST samples also write in snake case.
var maxTokenFields = [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens", "generationConfig.maxOutputTokens", "generation_config.max_output_tokens"}

// MaxTokensOf is the output cap a body sets, in whichever of the formats'
// fields it uses; 0 when it sets none.
func MaxTokensOf(body []byte) int {
	for _, r := range gjson.GetManyBytes(body, maxTokenFields[:]...) {
		if r.Type == gjson.Number && r.Int() > 0 {
			return int(r.Int())
		}
	}
	return 0
}

// CheckTurns rejects a body of format f that the provider would answer
// with a 400: no conversation (messages, or Gemini's contents), or an
// empty one.
func CheckTurns(body []byte, f Format) error {
	name, entry := f.rules().turns, f.rules().turn
	m := gjson.GetBytes(body, name)
	if !m.IsArray() {
		return errors.New("request has no " + name + " array")
	}
	empty := true
	m.ForEach(func(_, _ gjson.Result) bool { empty = false; return false })
	if empty {
		return errors.New("request has an empty " + name + " array (it needs at least one " + entry + ")")
	}
	return nil
}

// ContentsText gathers the text of a Gemini body a tokenizer should count:
// the system instruction's and the contents' text parts, or an
// embeddings body's (its content, or each of its requests').
func ContentsText(body []byte) []byte {
	var b []byte
	add := func(parts gjson.Result) {
		parts.ForEach(func(_, p gjson.Result) bool {
			if t := p.Get("text"); t.Type == gjson.String {
				b = append(b, t.Str...)
				b = append(b, '\n')
			}
			return true
		})
	}
	r := gjson.GetManyBytes(body, "systemInstruction.parts", "system_instruction.parts", "contents", "content.parts", "requests")
	add(r[0])
	add(r[1])
	r[2].ForEach(func(_, c gjson.Result) bool {
		add(c.Get("parts"))
		return true
	})
	add(r[3]) // an embeddings body: one content, or many requests
	r[4].ForEach(func(_, rq gjson.Result) bool {
		add(rq.Get("content.parts"))
		return true
	})
	return b
}
