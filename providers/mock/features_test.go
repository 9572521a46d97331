package mock_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestAnswerShapes: the mock honours JSON mode, n and forced tool calls,
// so --require-json, --json-schema and tools can be shown against it.
func TestAnswerShapes(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	valid := func(s string) bool { return json.Valid([]byte(s)) }

	r := post(t, srv, "/v1/chat/completions", oaBody("Name a colour, in JSON.", `,"response_format":{"type":"json_object"}`)) // json_object needs the word (rules.go)
	wantStatus(t, r, 200)
	if got := gjson.GetBytes(r.body, "choices.0.message.content").String(); !valid(got) || !strings.HasPrefix(got, "{") {
		t.Errorf("json_object: content %q", got)
	}
	schema := `,"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":{"type":"object","properties":{"colour":{"type":"string"},"hex":{"type":"string","enum":["#ff0000"]},"score":{"type":"integer","minimum":3},"tags":{"type":"array","items":{"type":"string"}}},"required":["colour","hex","score","tags"]}}}`
	r = post(t, srv, "/v1/chat/completions", oaBody("Name a colour.", schema))
	c := gjson.Parse(gjson.GetBytes(r.body, "choices.0.message.content").String())
	if c.Get("hex").String() != "#ff0000" || c.Get("score").Int() != 3 || !c.Get("colour").Exists() || len(c.Get("tags").Array()) != 1 {
		t.Errorf("json_schema: content %s", c.Raw)
	}

	r = post(t, srv, "/v1/chat/completions", oaBody("Name a colour.", `,"n":3`))
	if ch := gjson.GetBytes(r.body, "choices").Array(); len(ch) != 3 || ch[2].Get("index").Int() != 2 || ch[1].Get("message.content").String() == ch[0].Get("message.content").String() {
		t.Errorf("n=3: %s", r.body)
	}

	tools := `,"tools":[{"type":"function","function":{"name":"other","parameters":{"type":"object"}}},{"type":"function","function":{"name":"get_colour","parameters":{"type":"object","properties":{"name":{"type":"string"}}}}}]`
	r = post(t, srv, "/v1/chat/completions", oaBody("Name a colour.", tools+`,"tool_choice":{"type":"function","function":{"name":"get_colour"}}`))
	call := gjson.GetBytes(r.body, "choices.0.message.tool_calls.0")
	if call.Get("function.name").String() != "get_colour" || !valid(call.Get("function.arguments").String()) ||
		gjson.GetBytes(r.body, "choices.0.finish_reason").String() != "tool_calls" {
		t.Errorf("named tool: %s", r.body)
	}
	r = post(t, srv, "/v1/chat/completions", oaBody("Name a colour.", tools+`,"tool_choice":"required"`))
	if gjson.GetBytes(r.body, "choices.0.message.tool_calls.0.function.name").String() != "other" {
		t.Errorf("required: %s", r.body)
	}
	r = post(t, srv, "/v1/chat/completions", oaBody("Name a colour.", tools))
	if gjson.GetBytes(r.body, "choices.0.message.tool_calls").Exists() {
		t.Errorf("tool_choice auto answered with a call: %s", r.body)
	}

	r = post(t, srv, "/v1/messages", anBody("Name a colour.", `,"tools":[{"name":"get_colour","input_schema":{"type":"object","properties":{"name":{"type":"string"}}}}],"tool_choice":{"type":"any"}`))
	if gjson.GetBytes(r.body, "content.0.type").String() != "tool_use" || gjson.GetBytes(r.body, "content.0.name").String() != "get_colour" || gjson.GetBytes(r.body, "stop_reason").String() != "tool_use" {
		t.Errorf("anthropic tool_use: %s", r.body)
	}

	r = post(t, srv, "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Name a colour."}]}],"generationConfig":{"responseMimeType":"application/json"}}`)
	if got := gjson.GetBytes(r.body, "candidates.0.content.parts.0.text").String(); !valid(got) {
		t.Errorf("gemini JSON mode: %s", r.body)
	}
}

// TestModelLists: each dialect's model list is served.
func TestModelLists(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	get := func(path string, h ...string) []byte {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		r := do(srv, req)
		wantStatus(t, r, 200)
		return r.body
	}
	if b := get("/v1/models"); gjson.GetBytes(b, "object").String() != "list" || gjson.GetBytes(b, "data.0.id").String() != "mock-1" {
		t.Errorf("openai: %s", b)
	}
	if b := get("/v1/models", "anthropic-version", "2023-06-01"); gjson.GetBytes(b, "data.0.type").String() != "model" || !gjson.GetBytes(b, "has_more").Exists() {
		t.Errorf("anthropic: %s", b)
	}
	if b := get("/v1beta/models"); gjson.GetBytes(b, "models.0.name").String() != "models/mock-1" {
		t.Errorf("gemini: %s", b)
	}
}
