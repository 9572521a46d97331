package mock

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// shape is what a request asks of its answer's form beyond text, so the
// mock can show every feature llmrun has: JSON mode (OpenAI response_format
// json_object or json_schema, Gemini's responseMimeType application/json),
// n choices, and a tool call when the request forces one (tool_choice
// "required" or a named function; Anthropic tool_choice any or tool).
// JSON mode applies to streamed answers too; n and tool calls shape plain
// (non-streamed) answers only.
type shape struct {
	json   bool
	schema gjson.Result // the JSON schema the answer must follow, if any
	n      int
	tool   string // the tool to call ("": none)
	params gjson.Result
}

// parseShape reads the shape from a body in the dialect tag ('o' OpenAI,
// 'a' Anthropic, 'g' Gemini); nil when it asks nothing special.
func parseShape(tag byte, body []byte) *shape {
	var sh shape
	b := gjson.ParseBytes(body)
	switch tag {
	case 'o':
		switch b.Get("response_format.type").String() {
		case "json_object":
			sh.json = true
		case "json_schema":
			sh.json, sh.schema = true, b.Get("response_format.json_schema.schema")
		}
		sh.n = int(b.Get("n").Int())
		sh.tool, sh.params = forcedTool(b, "function.name", "function.parameters")
	case 'a':
		sh.tool, sh.params = forcedTool(b, "name", "input_schema")
	case 'g':
		gc := b.Get("generationConfig")
		sh.json = gc.Get("responseMimeType").String() == "application/json"
		sh.schema = gc.Get("responseJsonSchema")
		if !sh.schema.Exists() {
			sh.schema = gc.Get("responseSchema")
		}
	}
	if !sh.json && sh.n <= 1 && sh.tool == "" {
		return nil
	}
	return &sh
}

// forcedTool is the tool a request forces, by name, and its parameters'
// schema: the first tool for "required" (OpenAI) or "any" (Anthropic),
// the named one for {"type":"function","function":{"name":…}} or
// {"type":"tool","name":…}.
func forcedTool(b gjson.Result, namePath, paramsPath string) (string, gjson.Result) {
	tools := b.Get("tools").Array()
	if len(tools) == 0 {
		return "", gjson.Result{}
	}
	choice := b.Get("tool_choice")
	want := ""
	switch {
	case choice.String() == "required", choice.Get("type").String() == "any":
		return tools[0].Get(namePath).String(), tools[0].Get(paramsPath)
	case choice.Get("function.name").Exists():
		want = choice.Get("function.name").String()
	case choice.Get("type").String() == "tool":
		want = choice.Get("name").String()
	default:
		return "", gjson.Result{}
	}
	for _, t := range tools {
		if t.Get(namePath).String() == want {
			return want, t.Get(paramsPath)
		}
	}
	return "", gjson.Result{}
}

// text is the answer's text in JSON mode: a value following the schema
// (or {"answer": text}), never cut short, as the providers guarantee.
func (sh *shape) text(text string, truncated bool) (string, bool) {
	if sh == nil || !sh.json {
		return text, truncated
	}
	var v any = map[string]any{"answer": text}
	if sh.schema.Exists() {
		v = valueFor(sh.schema, text, 0)
	}
	b, _ := json.Marshal(v)
	return string(b), false
}

// valueFor is a value following schema: each required (or listed)
// property, strings from text, the first enum value, one array item.
func valueFor(schema gjson.Result, text string, depth int) any {
	if e := schema.Get("enum").Array(); len(e) > 0 {
		return e[0].Value()
	}
	if depth > 8 {
		return nil
	}
	typ := schema.Get("type").String()
	if t := schema.Get("type"); t.IsArray() && len(t.Array()) > 0 {
		typ = t.Array()[0].String()
	}
	switch typ {
	case "object", "OBJECT", "":
		out := map[string]any{}
		schema.Get("properties").ForEach(func(k, v gjson.Result) bool {
			out[k.String()] = valueFor(v, text, depth+1)
			return true
		})
		return out
	case "array", "ARRAY":
		return []any{valueFor(schema.Get("items"), text, depth+1)}
	case "string", "STRING":
		return text
	case "integer", "INTEGER", "number", "NUMBER":
		return max(schema.Get("minimum").Int(), 1)
	case "boolean", "BOOLEAN":
		return true
	}
	return nil
}

// reshape rewrites a plain answer body for n choices and a forced tool
// call, in the dialect tag.
func (sh *shape) reshape(tag byte, body []byte, c *completion) []byte {
	if sh == nil {
		return body
	}
	if sh.tool != "" {
		args, _ := json.Marshal(valueFor(sh.params, c.text, 0))
		id := "call_mock" + hex.EncodeToString([]byte(c.id))[:16]
		switch tag {
		case 'o':
			body, _ = sjson.SetRawBytes(body, "choices.0.message.content", []byte("null"))
			call := fmt.Sprintf(`[{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]`, id, sh.tool, args)
			body, _ = sjson.SetRawBytes(body, "choices.0.message.tool_calls", []byte(call))
			body, _ = sjson.SetBytes(body, "choices.0.finish_reason", "tool_calls")
		case 'a':
			use := fmt.Sprintf(`[{"type":"tool_use","id":%q,"name":%q,"input":%s}]`, "toolu_mock"+id[9:], sh.tool, args)
			body, _ = sjson.SetRawBytes(body, "content", []byte(use))
			body, _ = sjson.SetBytes(body, "stop_reason", "tool_use")
		}
	}
	if tag == 'o' && sh.n > 1 {
		first := gjson.GetBytes(body, "choices.0").Raw
		for i := 1; i < sh.n; i++ {
			choice, _ := sjson.Set(first, "index", i)
			if !sh.json && sh.tool == "" {
				choice, _ = sjson.Set(choice, "message.content", fmt.Sprintf("%s (choice %d)", c.text, i+1))
			}
			body, _ = sjson.SetRawBytes(body, fmt.Sprintf("choices.%d", i), []byte(choice))
		}
	}
	return body
}

// registerModelRoutes serves the model lists: OpenAI's GET /v1/models
// (Anthropic's shape when the request carries anthropic-version or
// x-api-key) and Gemini's GET /v1beta/models.
func (s *Server) registerModelRoutes() {
	models := []string{defaultModel, "gpt-4o-mini", "claude-haiku-4-5", "gemini-2.5-flash", "text-embedding-3-small"}
	s.mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		var data []map[string]any
		anthropicShape := r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != ""
		for _, m := range models {
			if anthropicShape {
				data = append(data, map[string]any{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"})
			} else {
				data = append(data, map[string]any{"id": m, "object": "model", "created": 1735689600, "owned_by": "llmrun-mock"})
			}
		}
		out := map[string]any{"object": "list", "data": data}
		if anthropicShape {
			out = map[string]any{"data": data, "has_more": false, "first_id": models[0], "last_id": models[len(models)-1]}
		}
		writeValue(w, out)
	})
	s.mux.HandleFunc("GET "+geminiPrefix+"models", func(w http.ResponseWriter, _ *http.Request) {
		var list []map[string]any
		for _, m := range models {
			list = append(list, map[string]any{"name": "models/" + m, "displayName": m,
				"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "embedContent", "batchGenerateContent"}})
		}
		writeValue(w, map[string]any{"models": list})
	})
}

func writeValue(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	writeJSON(w, b)
}
