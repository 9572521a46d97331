package providers

import (
	"fmt"
	"strconv"
	"strings"

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

// TranslateMax converts the fields both formats share (for Gemini, see
// translate_gemini.go): model, messages
// (text and image content; OpenAI system/developer messages ↔ Anthropic's
// top-level system), max_tokens/max_completion_tokens ↔ max_tokens,
// temperature, top_p, stop ↔ stop_sequences, and user ↔
// metadata.user_id. Fields that do not change what is asked (stream
// flags, storage, reasoning effort) are left out; anything else that has
// no equivalent (seed, n > 1, penalties, JSON output to Anthropic, a
// temperature above Anthropic's 1, tool calls, unknown fields and
// content parts) is a *TranslateError, never dropped silently (see
// translate_fields.go). The same format returns body itself.
//
// Strings are copied as raw JSON, so no text is re-escaped. The model name
// is copied unchanged; the caller sets the fallback's model.
func TranslateMax(body []byte, from, to Format, defaultMaxTokens int) ([]byte, error) {
	if from == to {
		return body, nil
	}
	if from == FormatGemini || to == FormatGemini {
		return translateGemini(body, from, to, defaultMaxTokens)
	}
	t := translator{from: from, to: to, out: []byte(`{}`)}
	if !gjson.ValidBytes(body) {
		return nil, t.fail("body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, t.fail("body is not a JSON object")
	}
	switch {
	case from == FormatOpenAI && to == FormatAnthropic:
		t.openAIToAnthropic(root, defaultMaxTokens)
	case from == FormatAnthropic && to == FormatOpenAI:
		t.anthropicToOpenAI(root)
	default:
		return nil, t.fail("unsupported pair of formats")
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

func (t *translator) openAIToAnthropic(root gjson.Result, defaultMaxTokens int) {
	if t.checkFields(root, openAIChatFields(false), ""); t.err != nil {
		return
	}
	t.copyField(root, "model", "model")
	var system []string // text blocks
	systemString := ""  // the raw string when there is exactly one string system message
	nSystem := 0
	var msgs []string
	root.Get("messages").ForEach(func(i, m gjson.Result) bool {
		role := m.Get("role").String()
		content := m.Get("content")
		switch role {
		case "system", "developer":
			nSystem++
			if content.Type == gjson.String {
				systemString = content.Raw
			}
			system = append(system, t.textBlocks(content, i.Int())...)
		case "user", "assistant":
			if m.Get("tool_calls").Exists() || m.Get("function_call").Exists() {
				t.fail("messages[%d] has tool calls", i.Int())
				return false
			}
			msgs = append(msgs, `{"role":"`+role+`","content":`+t.toAnthropicContent(content, i.Int())+`}`)
		default:
			t.fail("messages[%d] has role %q", i.Int(), role)
			return false
		}
		return t.err == nil
	})
	switch {
	case nSystem == 1 && systemString != "":
		t.setRaw("system", systemString)
	case len(system) > 0:
		t.setRaw("system", "["+strings.Join(system, ",")+"]")
	}
	t.setRaw("messages", "["+strings.Join(msgs, ",")+"]")

	limit := root.Get("max_completion_tokens")
	if !limit.Exists() || limit.Type == gjson.Null {
		limit = root.Get("max_tokens")
	}
	if limit.Type == gjson.Number {
		t.setRaw("max_tokens", limit.Raw)
	} else {
		t.setRaw("max_tokens", strconv.Itoa(defaultMaxTokens))
	}
	if temp := root.Get("temperature"); temp.Type == gjson.Number {
		if temp.Float() > 1 { // OpenAI allows up to 2, Anthropic up to 1
			t.fail("temperature %s is above Anthropic's maximum of 1 (set it to 1 or less)", temp.Raw)
		} else {
			t.setRaw("temperature", temp.Raw)
		}
	}
	t.copyField(root, "top_p", "top_p")
	switch stop := root.Get("stop"); {
	case stop.Type == gjson.String:
		t.setRaw("stop_sequences", "["+stop.Raw+"]")
	case stop.IsArray():
		t.setRaw("stop_sequences", stop.Raw)
	}
	if u := root.Get("user"); u.Type == gjson.String {
		t.setRaw("metadata.user_id", u.Raw)
	}
}

// textBlocks turns a system message's content into Anthropic text blocks.
func (t *translator) textBlocks(c gjson.Result, i int64) []string {
	if c.Type == gjson.String {
		return []string{`{"type":"text","text":` + c.Raw + `}`}
	}
	var out []string
	c.ForEach(func(_, part gjson.Result) bool {
		if part.Get("type").String() != "text" {
			t.fail("messages[%d]: system content part of type %q", i, part.Get("type").String())
			return false
		}
		out = append(out, `{"type":"text","text":`+t.text(part)+`}`)
		return true
	})
	return out
}

// text returns the raw JSON string of a text block's text; a block whose
// text is missing or not a string fails the translation (it would
// otherwise produce invalid JSON).
func (t *translator) text(block gjson.Result) string {
	v := block.Get("text")
	if v.Type != gjson.String {
		t.fail("text block without a text string")
		return `""`
	}
	return v.Raw
}

func (t *translator) toAnthropicContent(c gjson.Result, i int64) string {
	switch {
	case c.Type == gjson.String:
		return c.Raw
	case !c.IsArray():
		t.fail("messages[%d] has no content", i)
		return `""`
	}
	var parts []string
	c.ForEach(func(_, part gjson.Result) bool {
		switch typ := part.Get("type").String(); typ {
		case "text":
			parts = append(parts, `{"type":"text","text":`+t.text(part)+`}`)
		case "image_url":
			url := part.Get("image_url.url").String()
			var b []byte
			var err error
			if mediaType, data, ok := parseDataURL(url); ok {
				b, err = sjson.SetBytes([]byte(`{"type":"image","source":{"type":"base64"}}`), "source.media_type", mediaType)
				if err == nil {
					b, err = sjson.SetBytes(b, "source.data", data)
				}
			} else {
				b, err = sjson.SetBytes([]byte(`{"type":"image","source":{"type":"url"}}`), "source.url", url)
			}
			if err != nil {
				t.fail("messages[%d]: image: %v", i, err)
				return false
			}
			parts = append(parts, string(b))
		default:
			t.fail("messages[%d]: content part of type %q", i, typ)
			return false
		}
		return true
	})
	return "[" + strings.Join(parts, ",") + "]"
}

// parseDataURL splits "data:<media type>;base64,<data>".
func parseDataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, ok = strings.CutSuffix(meta, ";base64")
	return mediaType, data, ok
}

func (t *translator) anthropicToOpenAI(root gjson.Result) {
	if t.checkFields(root, anthropicFields, ""); t.err != nil {
		return
	}
	t.copyField(root, "model", "model")
	var msgs []string
	switch sys := root.Get("system"); {
	case sys.Type == gjson.String:
		msgs = append(msgs, `{"role":"system","content":`+sys.Raw+`}`)
	case sys.IsArray():
		var parts []string
		sys.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").String() != "text" {
				t.fail("system block of type %q", b.Get("type").String())
				return false
			}
			parts = append(parts, `{"type":"text","text":`+t.text(b)+`}`)
			return true
		})
		if len(parts) == 1 {
			msgs = append(msgs, `{"role":"system","content":`+t.text(sys.Get("0"))+`}`)
		} else if len(parts) > 1 {
			msgs = append(msgs, `{"role":"system","content":[`+strings.Join(parts, ",")+`]}`)
		}
	}
	root.Get("messages").ForEach(func(i, m gjson.Result) bool {
		role := m.Get("role").String()
		if role != "user" && role != "assistant" {
			t.fail("messages[%d] has role %q", i.Int(), role)
			return false
		}
		msgs = append(msgs, `{"role":"`+role+`","content":`+t.toOpenAIContent(m.Get("content"), i.Int())+`}`)
		return t.err == nil
	})
	t.setRaw("messages", "["+strings.Join(msgs, ",")+"]")
	// max_completion_tokens is the current field; max_tokens is deprecated
	// and rejected by reasoning models.
	t.copyField(root, "max_tokens", "max_completion_tokens")
	t.copyField(root, "temperature", "temperature")
	t.copyField(root, "top_p", "top_p")
	if stop := root.Get("stop_sequences"); stop.IsArray() {
		if n := len(stop.Array()); n > maxOpenAIStops {
			t.fail("%d stop sequences, OpenAI accepts %d", n, maxOpenAIStops)
		} else if n > 0 {
			t.setRaw("stop", stop.Raw)
		}
	}
	if u := root.Get("metadata.user_id"); u.Type == gjson.String {
		t.setRaw("user", u.Raw)
	}
}

func (t *translator) toOpenAIContent(c gjson.Result, i int64) string {
	switch {
	case c.Type == gjson.String:
		return c.Raw
	case !c.IsArray():
		t.fail("messages[%d] has no content", i)
		return `""`
	}
	var parts []string
	c.ForEach(func(_, b gjson.Result) bool {
		switch typ := b.Get("type").String(); typ {
		case "text":
			parts = append(parts, `{"type":"text","text":`+t.text(b)+`}`)
		case "image":
			src := b.Get("source")
			var url string
			switch src.Get("type").String() {
			case "base64":
				url = "data:" + src.Get("media_type").String() + ";base64," + src.Get("data").String()
			case "url":
				url = src.Get("url").String()
			default:
				t.fail("messages[%d]: image source of type %q", i, src.Get("type").String())
				return false
			}
			p, err := sjson.SetBytes([]byte(`{"type":"image_url"}`), "image_url.url", url)
			if err != nil {
				t.fail("messages[%d]: image: %v", i, err)
				return false
			}
			parts = append(parts, string(p))
		default:
			t.fail("messages[%d]: content block of type %q", i, typ)
			return false
		}
		return true
	})
	return "[" + strings.Join(parts, ",") + "]"
}
