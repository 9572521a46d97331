package providers

import (
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// DefaultMaxTokens is the max_tokens Translate gives an Anthropic body when
// the OpenAI body set no cap: Anthropic requires one, OpenAI does not.
const DefaultMaxTokens = 1024

// maxOpenAIStops is the most stop sequences Chat Completions accepts.
const maxOpenAIStops = 4

// TranslateError says why a body cannot be expressed in the other format.
// Falling back to that provider is then impossible for this request.
type TranslateError struct {
	From, To Format
	Reason   string
}

func (e *TranslateError) Error() string {
	return fmt.Sprintf("providers: cannot translate %v request to %v: %s", e.From, e.To, e.Reason)
}

// Translate converts a request body from one wire format to another, for
// fallback across providers; see TranslateMax. A missing output cap becomes
// DefaultMaxTokens.
func Translate(body []byte, from, to Format) ([]byte, error) {
	return TranslateMax(body, from, to, DefaultMaxTokens)
}

// TranslateMax converts a request body from one wire format to another
// through the pivot (pivot.go): the source format's toPivot, then the
// target's fromPivot. What each carries is said there and in the formats'
// files (translate_anthropic.go, translate_gemini.go): model, messages
// (text and image content, system and developer messages ↔ Anthropic's
// top-level system), the output cap, temperature, top_p, stop sequences,
// user. Fields that do not change what is asked (stream flags, storage,
// reasoning effort) are left out; anything else that has no equivalent
// (seed, n > 1, penalties, JSON output to Anthropic, a temperature above
// Anthropic's 1, tool calls, unknown fields and content parts) is a
// *TranslateError, never dropped silently (see translate_fields.go). A
// missing output cap becomes defaultMaxTokens where the target requires
// one. The same format returns body itself.
//
// Strings are copied as raw JSON, so no text is re-escaped. The model name
// is copied unchanged; the caller sets the fallback's model.
func TranslateMax(body []byte, from, to Format, defaultMaxTokens int) ([]byte, error) {
	if from == to {
		return body, nil
	}
	return viaPivot(body, from, to, EndpointChat, defaultMaxTokens)
}

// convert parses body, which must be a JSON object, and has fill write
// its translation from format from to format to: the result, or the first
// failure as a *TranslateError.
func convert(from, to Format, body []byte, fill func(t *translator, root gjson.Result)) ([]byte, error) {
	t := translator{from: from, to: to, out: []byte(`{}`)}
	if root, ok := t.object(body); ok {
		fill(&t, root)
	}
	if t.err != nil {
		return nil, t.err
	}
	return t.out, nil
}

// translator collects the output and the first error, so the field-by-field
// code reads straight.
type translator struct {
	from, to Format
	out      []byte
	err      error
}

func (t *translator) fail(format string, args ...any) error {
	if t.err == nil {
		t.err = &TranslateError{From: t.from, To: t.to, Reason: fmt.Sprintf(format, args...)}
	}
	return t.err
}

func (t *translator) setRaw(path, raw string) {
	if t.err == nil && raw != "" {
		var err error
		if t.out, err = sjson.SetRawBytes(t.out, path, []byte(raw)); err != nil {
			t.fail("%s: %v", path, err)
		}
	}
}

// copyField copies a present, non-null field under a new name.
func (t *translator) copyField(root gjson.Result, from, to string) {
	if v := root.Get(from); v.Exists() && v.Type != gjson.Null {
		t.setRaw(to, v.Raw)
	}
}
