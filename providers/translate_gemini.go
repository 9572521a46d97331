package providers

import (
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Gemini's generateContent body to and from the pivot (pivot.go;
// wire-formats §5.2): geminiToOpenAI is its toPivot, openAIToGemini its
// fromPivot.

// maxGeminiStops is the most stop sequences Gemini accepts.
const maxGeminiStops = 5

// geminiFromPivot is Gemini's fromPivot (Gemini requires no cap).
func geminiFromPivot(pivot []byte, _ int) ([]byte, error) {
	return convert(FormatOpenAI, FormatGemini, pivot, (*translator).openAIToGemini)
}

// geminiToPivot is Gemini's toPivot.
func geminiToPivot(body []byte) ([]byte, error) {
	return convert(FormatGemini, FormatOpenAI, body, (*translator).geminiToOpenAI)
}

// openAIToGemini translates a Chat Completions body; what Gemini cannot
// be told (tools, images by URL, too many stops) fails the translation.
func (t *translator) openAIToGemini(root gjson.Result) {
	if !root.Get("messages").Exists() && root.Get("input").Exists() {
		t.fail("an embeddings or Responses body, not a chat one (llmrun sends Gemini chat requests only)")
		return
	}
	if t.checkFields(root, pivotFields(nil), ""); t.err != nil {
		return
	}
	t.copyField(root, "model", "model")
	t.geminiContents(root.Get("messages"))
	t.geminiGenerationConfig(root)
	for _, k := range []string{"tools", "functions", "tool_choice"} {
		if v := root.Get(k); v.Exists() && v.Type != gjson.Null {
			t.fail("%s has no Gemini translation here", k)
		}
	}
}

// geminiContents sets systemInstruction (system and developer messages)
// and contents (user and assistant turns, assistant as "model").
func (t *translator) geminiContents(messages gjson.Result) {
	var system []string // Gemini parts
	var contents []string
	messages.ForEach(func(i, m gjson.Result) bool {
		role, c := m.Get("role").String(), m.Get("content")
		switch role {
		case "system", "developer":
			system = append(system, t.geminiParts(c, i.Int(), true)...)
		case "user", "assistant":
			if m.Get("tool_calls").Exists() || m.Get("function_call").Exists() {
				t.fail("messages[%d] has tool calls", i.Int())
				return false
			}
			r := "user"
			if role == "assistant" {
				r = "model"
			}
			parts := t.geminiParts(c, i.Int(), false)
			contents = append(contents, `{"role":"`+r+`","parts":[`+strings.Join(parts, ",")+`]}`)
		default:
			t.fail("messages[%d] has role %q", i.Int(), role)
			return false
		}
		return t.err == nil
	})
	if len(system) > 0 {
		t.setRaw("systemInstruction", `{"parts":[`+strings.Join(system, ",")+`]}`)
	}
	t.setRaw("contents", "["+strings.Join(contents, ",")+"]")
}

// geminiGenerationConfig maps the sampling fields, the stop sequences and
// JSON output onto generationConfig.
func (t *translator) geminiGenerationConfig(root gjson.Result) {
	limit := root.Get("max_completion_tokens")
	if !limit.Exists() || limit.Type == gjson.Null {
		limit = root.Get("max_tokens")
	}
	if limit.Type == gjson.Number {
		t.setRaw("generationConfig.maxOutputTokens", limit.Raw)
	}
	for _, f := range [][2]string{{"temperature", "temperature"}, {"top_p", "topP"}, {"n", "candidateCount"},
		{"seed", "seed"}, {"presence_penalty", "presencePenalty"}, {"frequency_penalty", "frequencyPenalty"}} {
		if v := root.Get(f[0]); v.Type == gjson.Number {
			t.setRaw("generationConfig."+f[1], v.Raw)
		}
	}
	switch stop := root.Get("stop"); {
	case stop.Type == gjson.String:
		t.setRaw("generationConfig.stopSequences", "["+stop.Raw+"]")
	case stop.IsArray():
		if n := len(stop.Array()); n > maxGeminiStops {
			t.fail("%d stop sequences, Gemini accepts %d", n, maxGeminiStops)
		} else if n > 0 {
			t.setRaw("generationConfig.stopSequences", stop.Raw)
		}
	}
	switch rf := root.Get("response_format"); rf.Get("type").String() {
	case "", "text":
	case "json_object":
		t.setRaw("generationConfig.responseMimeType", `"application/json"`)
	case "json_schema":
		t.setRaw("generationConfig.responseMimeType", `"application/json"`)
		if s := rf.Get("json_schema.schema"); s.IsObject() {
			t.setRaw("generationConfig.responseJsonSchema", s.Raw)
		}
	default:
		t.fail("response_format of type %q", rf.Get("type").String())
	}
}

// object parses body as the JSON object every format's body is.
func (t *translator) object(body []byte) (gjson.Result, bool) {
	if !gjson.ValidBytes(body) {
		t.fail("body is not valid JSON")
		return gjson.Result{}, false
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		t.fail("body is not a JSON object")
		return root, false
	}
	return root, true
}

// geminiParts turns an OpenAI message content into Gemini parts: text
// parts, and images given as data: URLs as inline data. Gemini reads an
// image by URL only from its own Files API, so an http(s) image cannot be
// sent. A system message takes text only.
func (t *translator) geminiParts(c gjson.Result, i int64, system bool) []string {
	switch {
	case c.Type == gjson.String:
		return []string{`{"text":` + c.Raw + `}`}
	case !c.IsArray():
		t.fail("messages[%d] has no content", i)
		return nil
	}
	var parts []string
	c.ForEach(func(_, part gjson.Result) bool {
		switch typ := part.Get("type").String(); {
		case typ == "text":
			parts = append(parts, `{"text":`+t.text(part)+`}`)
		case typ == "image_url" && !system:
			mediaType, data, ok := parseDataURL(part.Get("image_url.url").String())
			if !ok {
				t.fail("messages[%d]: an image by URL (Gemini takes images inline, as data: URLs)", i)
				return false
			}
			p, err := sjson.SetBytes([]byte(`{"inlineData":{}}`), "inlineData.mimeType", mediaType)
			if err == nil {
				p, err = sjson.SetBytes(p, "inlineData.data", data)
			}
			if err != nil {
				t.fail("messages[%d]: image: %v", i, err)
				return false
			}
			parts = append(parts, string(p))
		default:
			t.fail("messages[%d]: content part of type %q", i, typ)
			return false
		}
		return true
	})
	return parts
}

// geminiToOpenAI translates a generateContent body (camelCase or
// snake_case fields, as Google's REST API takes both); tools, cached
// content, OpenAPI schemas and settings with no OpenAI equivalent (topK)
// fail the translation. JSON mode without a schema becomes json_object,
// which OpenAI accepts only with the word "json" in the messages: when
// none says it, a system message asking for JSON goes first (Gemini's
// JSON mode asks the same without being told).
func (t *translator) geminiToOpenAI(root gjson.Result) {
	for _, k := range []string{"tools", "toolConfig", "tool_config", "cachedContent", "cached_content"} {
		if v := root.Get(k); v.Exists() && v.Type != gjson.Null {
			t.fail("%s has no OpenAI translation", k)
			return
		}
	}
	t.checkFields(root, geminiFields, "")
	gc := root.Get("generationConfig")
	if !gc.Exists() {
		gc = root.Get("generation_config")
	}
	t.checkFields(gc, geminiConfigFields, "generationConfig.")
	if t.err != nil {
		return
	}
	t.copyField(root, "model", "model")
	t.openAIMessages(root)
	t.openAIGenerationConfig(gc)
	t.mentionJSON()
}

// openAIMessages sets messages: the system instruction first, then the
// contents, "model" turns as assistant.
func (t *translator) openAIMessages(root gjson.Result) {
	var msgs []string
	sys := root.Get("systemInstruction")
	if !sys.Exists() {
		sys = root.Get("system_instruction")
	}
	if sys.Exists() && sys.Type != gjson.Null {
		if content := t.openAIContent(sys.Get("parts"), "systemInstruction", true); t.err == nil {
			msgs = append(msgs, `{"role":"system","content":`+content+`}`)
		}
	}
	root.Get("contents").ForEach(func(i, c gjson.Result) bool {
		role := c.Get("role").String()
		switch role {
		case "", "user":
			role = "user"
		case "model":
			role = "assistant"
		default:
			t.fail("contents[%d] has role %q", i.Int(), role)
			return false
		}
		content := t.openAIContent(c.Get("parts"), "contents["+i.String()+"]", false)
		msgs = append(msgs, `{"role":"`+role+`","content":`+content+`}`)
		return t.err == nil
	})
	t.setRaw("messages", "["+strings.Join(msgs, ",")+"]")
}

// openAIGenerationConfig maps generationConfig gc's sampling fields, stop
// sequences and JSON output onto the top-level OpenAI fields.
func (t *translator) openAIGenerationConfig(gc gjson.Result) {
	get := func(camel, snake string) gjson.Result {
		if v := gc.Get(camel); v.Exists() {
			return v
		}
		return gc.Get(snake)
	}
	for _, f := range [][3]string{{"maxOutputTokens", "max_output_tokens", "max_completion_tokens"}, {"temperature", "temperature", "temperature"},
		{"topP", "top_p", "top_p"}, {"candidateCount", "candidate_count", "n"}, {"seed", "seed", "seed"},
		{"presencePenalty", "presence_penalty", "presence_penalty"}, {"frequencyPenalty", "frequency_penalty", "frequency_penalty"}} {
		if v := get(f[0], f[1]); v.Type == gjson.Number {
			t.setRaw(f[2], v.Raw)
		}
	}
	if stop := get("stopSequences", "stop_sequences"); stop.IsArray() {
		if n := len(stop.Array()); n > maxOpenAIStops {
			t.fail("%d stop sequences, OpenAI accepts %d", n, maxOpenAIStops)
		} else if n > 0 {
			t.setRaw("stop", stop.Raw)
		}
	}
	if mt := get("responseMimeType", "response_mime_type").String(); mt == "application/json" {
		schema := get("responseJsonSchema", "response_json_schema")
		if schema.IsObject() {
			t.setRaw("response_format", `{"type":"json_schema","json_schema":{"name":"response","schema":`+schema.Raw+`}}`)
		} else if get("responseSchema", "response_schema").Exists() {
			t.fail("responseSchema (an OpenAPI schema) has no OpenAI translation; give responseJsonSchema")
		} else {
			t.setRaw("response_format", `{"type":"json_object"}`)
		}
	} else if mt != "" && mt != "text/plain" {
		t.fail("responseMimeType %q has no OpenAI translation", mt)
	}
}

// openAIContent turns Gemini parts into an OpenAI content: a string for
// one text part, else an array of text and (inline image) parts. Function
// calls and responses, files and thoughts do not translate.
func (t *translator) openAIContent(parts gjson.Result, where string, system bool) string {
	if !parts.IsArray() {
		t.fail("%s has no parts", where)
		return `""`
	}
	var out []string
	texts := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		switch {
		case p.Get("thought").Bool():
			t.fail("%s has a thought part", where)
		case p.Get("text").Exists():
			out = append(out, `{"type":"text","text":`+t.text(p)+`}`)
			texts++
		case p.Get("inlineData").Exists() || p.Get("inline_data").Exists():
			d := p.Get("inlineData")
			if !d.Exists() {
				d = p.Get("inline_data")
			}
			mt := d.Get("mimeType").String()
			if mt == "" {
				mt = d.Get("mime_type").String()
			}
			if system || !strings.HasPrefix(mt, "image/") {
				t.fail("%s has inline data of type %q", where, mt)
				return false
			}
			b, err := sjson.SetBytes([]byte(`{"type":"image_url"}`), "image_url.url", "data:"+mt+";base64,"+d.Get("data").String())
			if err != nil {
				t.fail("%s: image: %v", where, err)
				return false
			}
			out = append(out, string(b))
		default:
			var kind string
			p.ForEach(func(k, _ gjson.Result) bool { kind = k.String(); return false })
			t.fail("%s has a %s part", where, kind)
		}
		return t.err == nil
	})
	if len(out) == 1 && texts == 1 {
		return parts.Get("0.text").Raw
	}
	return "[" + strings.Join(out, ",") + "]"
}

// jsonInstruction is the system message a translated JSON-mode request
// gets when no message mentions JSON (see geminiToOpenAI).
const jsonInstruction = `{"role":"system","content":"Respond with JSON."}`

// mentionJSON puts jsonInstruction first in a json_object request whose
// messages never say "json".
func (t *translator) mentionJSON() {
	if t.err != nil || gjson.GetBytes(t.out, "response_format.type").String() != "json_object" {
		return
	}
	msgs := gjson.GetBytes(t.out, "messages")
	if MessagesMention(msgs, "json") {
		return
	}
	raw := "[" + jsonInstruction
	if inner := strings.TrimSpace(msgs.Raw[1 : len(msgs.Raw)-1]); inner != "" {
		raw += "," + inner
	}
	t.setRaw("messages", raw+"]")
}

// MessagesMention reports whether any text of Chat Completions messages
// contains word (lower case), in any case: OpenAI's JSON mode needs
// "json" said in them.
func MessagesMention(messages gjson.Result, word string) bool {
	found := false
	messages.ForEach(func(_, m gjson.Result) bool {
		c := m.Get("content")
		if c.Type == gjson.String {
			found = strings.Contains(strings.ToLower(c.Str), word)
		} else {
			c.ForEach(func(_, p gjson.Result) bool {
				found = strings.Contains(strings.ToLower(p.Get("text").Str), word)
				return !found
			})
		}
		return !found
	})
	return found
}
