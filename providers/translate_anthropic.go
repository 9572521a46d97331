package providers

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Anthropic's Messages body to and from the pivot (pivot.go).

// anthropicFromPivot is Anthropic's fromPivot.
func anthropicFromPivot(pivot []byte, defaultMaxTokens int) ([]byte, error) {
	return convert(FormatOpenAI, FormatAnthropic, pivot, func(t *translator, root gjson.Result) {
		t.openAIToAnthropic(root, defaultMaxTokens)
	})
}

// anthropicToPivot is Anthropic's toPivot.
func anthropicToPivot(body []byte) ([]byte, error) {
	return convert(FormatAnthropic, FormatOpenAI, body, (*translator).anthropicToOpenAI)
}

func (t *translator) openAIToAnthropic(root gjson.Result, defaultMaxTokens int) {
	if t.checkFields(root, pivotFields(anthropicRefuses), ""); t.err != nil {
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

// toAnthropicContent is a pivot message's content as Anthropic's: a
// string as it is, text parts and images (data: URLs as base64 sources).
func (t *translator) toAnthropicContent(c gjson.Result, i int64) string {
	return t.content(c, i, "image_url", "part", func(part gjson.Result) (string, bool) {
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
		return string(b), t.imageErr(err, i)
	})
}

// content converts a message content c (of messages[i]) between the
// pivot and Anthropic, whose contents differ only in their images: a
// string stays as it is, text parts stay text parts, parts of type image
// become what convert makes of them (false: it failed the translation);
// any other part fails the translation (kind is what the source calls a
// part).
func (t *translator) content(c gjson.Result, i int64, image, kind string, convert func(gjson.Result) (string, bool)) string {
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
		case image:
			p, ok := convert(part)
			if !ok {
				return false
			}
			parts = append(parts, p)
		default:
			t.fail("messages[%d]: content %s of type %q", i, kind, typ)
			return false
		}
		return true
	})
	return "[" + strings.Join(parts, ",") + "]"
}

// imageErr fails the translation of messages[i] for an image that could
// not be written; it reports whether err was nil.
func (t *translator) imageErr(err error, i int64) bool {
	if err != nil {
		t.fail("messages[%d]: image: %v", i, err)
	}
	return err == nil
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

// toOpenAIContent is an Anthropic message's content in the pivot: a
// string as it is, text blocks and images (base64 sources as data: URLs).
func (t *translator) toOpenAIContent(c gjson.Result, i int64) string {
	return t.content(c, i, "image", "block", func(b gjson.Result) (string, bool) {
		src := b.Get("source")
		var url string
		switch src.Get("type").String() {
		case "base64":
			url = "data:" + src.Get("media_type").String() + ";base64," + src.Get("data").String()
		case "url":
			url = src.Get("url").String()
		default:
			t.fail("messages[%d]: image source of type %q", i, src.Get("type").String())
			return "", false
		}
		p, err := sjson.SetBytes([]byte(`{"type":"image_url"}`), "image_url.url", url)
		return string(p), t.imageErr(err, i)
	})
}
