package providers

import (
	"errors"
	"strings"

	"github.com/tidwall/gjson"
)

// TranslateEndpoint converts a request for endpoint ep from one wire
// format to another, for input lines of another provider's shape and for
// fallback: chat requests as Translate does; a Responses request to a
// format without that API becomes a chat request there (see
// ResponsesToChat); an embeddings request goes between OpenAI's format and
// Gemini's, the two that have embeddings, and no further. It returns the body and the endpoint
// it is for. The same format returns body and ep themselves.
func TranslateEndpoint(body []byte, from Format, ep Endpoint, to Format) ([]byte, Endpoint, error) {
	if from == to {
		return body, ep, nil
	}
	switch ep {
	case EndpointEmbeddings:
		out, err := viaPivot(body, from, to, ep, 0)
		return out, ep, err
	case EndpointResponses:
		chat, err := ResponsesToChat(body)
		var te *TranslateError
		if errors.As(err, &te) {
			return nil, ep, &TranslateError{From: from, To: to, Reason: "Responses request: " + te.Reason}
		}
		body = chat
	}
	out, err := Translate(body, from, to)
	return out, EndpointChat, err
}

// ResponsesToChat turns an OpenAI Responses request into the Chat
// Completions request that asks the same: instructions become a system
// message; input (a string, or message items with text and image parts)
// the messages; max_output_tokens max_completion_tokens; text.format the
// response_format; temperature, top_p, user and metadata carry over.
// Server-side state (previous_response_id, conversation), tools and items
// other than messages change the meaning and fail with a *TranslateError.
func ResponsesToChat(body []byte) ([]byte, error) {
	t := translator{from: FormatOpenAI, to: FormatOpenAI, out: []byte(`{}`)}
	fail := func(format string, args ...any) ([]byte, error) {
		t.fail(format, args...)
		return nil, t.err
	}
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return fail("body is not a JSON object")
	}
	root := gjson.ParseBytes(body)
	if t.checkFields(root, responsesFields, ""); t.err != nil {
		return nil, t.err
	}
	for _, k := range []string{"previous_response_id", "conversation"} {
		if v := root.Get(k); v.Exists() && v.Type != gjson.Null {
			return fail("%s refers to state kept by the Responses API", k)
		}
	}
	if tools := root.Get("tools"); tools.IsArray() && len(tools.Array()) > 0 {
		return fail("the request has tools")
	}
	t.copyField(root, "model", "model")
	var msgs []string
	if in := root.Get("instructions"); in.Type == gjson.String {
		msgs = append(msgs, `{"role":"system","content":`+in.Raw+`}`)
	}
	switch in := root.Get("input"); {
	case in.Type == gjson.String:
		msgs = append(msgs, `{"role":"user","content":`+in.Raw+`}`)
	case in.IsArray():
		in.ForEach(func(i, item gjson.Result) bool {
			if typ := item.Get("type").Str; typ != "" && typ != "message" {
				t.fail("input[%d] is a %s item", i.Int(), typ)
				return false
			}
			role := item.Get("role").Str
			switch role {
			case "user", "assistant", "system", "developer":
			default:
				t.fail("input[%d] has role %q", i.Int(), role)
				return false
			}
			msgs = append(msgs, `{"role":"`+role+`","content":`+t.chatContent(item.Get("content"), i.Int())+`}`)
			return t.err == nil
		})
	default:
		return fail("the request has no input")
	}
	if t.err != nil {
		return nil, t.err
	}
	t.setRaw("messages", "["+strings.Join(msgs, ",")+"]")
	t.copyField(root, "max_output_tokens", "max_completion_tokens")
	for _, k := range []string{"temperature", "top_p", "user", "metadata", "service_tier"} {
		t.copyField(root, k, k)
	}
	switch f := root.Get("text.format"); f.Get("type").Str {
	case "json_schema":
		schema := `{"name":` + f.Get("name").Raw + `,"schema":` + f.Get("schema").Raw
		if s := f.Get("strict"); s.Exists() {
			schema += `,"strict":` + s.Raw
		}
		t.setRaw("response_format", `{"type":"json_schema","json_schema":`+schema+`}}`)
	case "json_object":
		t.setRaw("response_format", `{"type":"json_object"}`)
	}
	if t.err != nil {
		return nil, t.err
	}
	return t.out, nil
}

// chatContent turns a Responses message's content into Chat's: a string
// stays; input_text and output_text parts become text parts, input_image
// parts with a URL image_url parts.
func (t *translator) chatContent(c gjson.Result, i int64) string {
	if c.Type == gjson.String {
		return c.Raw
	}
	if !c.IsArray() {
		t.fail("input[%d] has no content", i)
		return `""`
	}
	var parts []string
	c.ForEach(func(_, p gjson.Result) bool {
		switch typ := p.Get("type").Str; typ {
		case "input_text", "output_text":
			parts = append(parts, `{"type":"text","text":`+t.text(p)+`}`)
		case "input_image":
			u := p.Get("image_url")
			if u.Type != gjson.String {
				t.fail("input[%d]: an image without an image_url (a file_id has no Chat equivalent)", i)
				return false
			}
			parts = append(parts, `{"type":"image_url","image_url":{"url":`+u.Raw+`}}`)
		default:
			t.fail("input[%d]: content part of type %q", i, typ)
			return false
		}
		return true
	})
	return "[" + strings.Join(parts, ",") + "]"
}
