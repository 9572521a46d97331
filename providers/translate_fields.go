package providers

import (
	"sort"
	"strings"

	"github.com/tidwall/gjson"
)

// A translation never drops what the request means silently: every field
// of the source body is either translated (by its toPivot or fromPivot), left
// out because it does not change what is asked (stream flags, storage and
// billing options, how hard a model thinks), or refused with the reason
// when set to anything but its neutral value. A field of none of these
// kinds is refused too: an unknown field may mean anything.

// fieldRule is what a translation does with one source field.
type fieldRule struct {
	// refuse, if set, says why the field cannot be translated when it is
	// set to something other than a neutral value.
	refuse string
	// neutral are the raw JSON values that ask for nothing (the field's
	// default); null always counts as neutral.
	neutral []string
}

// kept is the rule of a field the pair translates or may leave out.
var kept = fieldRule{}

func refused(why string, neutral ...string) fieldRule {
	return fieldRule{refuse: why, neutral: neutral}
}

// pivotFields are the Chat Completions fields a pivot may hold (pivot.go;
// OpenAI's own bodies are pivots as they are), for a format's fromPivot;
// refuse overrides the rules of the fields that format has no place for.
func pivotFields(refuse map[string]fieldRule) map[string]fieldRule {
	m := map[string]fieldRule{
		"model": kept, "messages": kept, "max_tokens": kept, "max_completion_tokens": kept,
		"temperature": kept, "top_p": kept, "stop": kept, "user": kept,
		"n": kept, "seed": kept, "presence_penalty": kept, "frequency_penalty": kept, "response_format": kept,
		// Transport, storage and billing: not what is asked.
		"stream": kept, "stream_options": kept, "store": kept, "metadata": kept, "service_tier": kept,
		// How hard a reasoning model thinks, not what it is asked.
		"reasoning_effort":    kept,
		"logprobs":            refused("logprobs has no equivalent", "false"),
		"top_logprobs":        refused("top_logprobs has no equivalent", "0"),
		"logit_bias":          refused("logit_bias has no equivalent", "{}"),
		"tools":               refused("tools are not translated", "[]"),
		"functions":           refused("functions are not translated", "[]"),
		"tool_choice":         refused("tool_choice is not translated", `"none"`, `"auto"`),
		"parallel_tool_calls": kept,
		"audio":               refused("audio output has no equivalent"),
		"modalities":          refused("modalities other than text have no equivalent", `["text"]`),
		"prediction":          refused("prediction has no equivalent"),
		"web_search_options":  refused("web_search_options has no equivalent"),
		"verbosity":           refused("verbosity has no equivalent", `"medium"`),
	}
	for k, r := range refuse {
		m[k] = r
	}
	return m
}

// anthropicRefuses are the pivot's fields Anthropic's Messages has no
// place for.
var anthropicRefuses = map[string]fieldRule{
	"n":                 refused("n > 1 (several choices) has no Anthropic equivalent: send n copies of the line", "1"),
	"seed":              refused("seed has no Anthropic equivalent (Anthropic's sampling cannot be seeded)"),
	"presence_penalty":  refused("presence_penalty has no Anthropic equivalent", "0", "0.0"),
	"frequency_penalty": refused("frequency_penalty has no Anthropic equivalent", "0", "0.0"),
	"response_format":   refused("response_format (JSON output) has no Anthropic equivalent here: ask for JSON in the prompt, or send the line to an OpenAI or Gemini model", `{"type":"text"}`),
}

// anthropicFields are the Messages fields, for a translation to OpenAI.
var anthropicFields = map[string]fieldRule{
	"model": kept, "messages": kept, "system": kept, "max_tokens": kept,
	"temperature": kept, "top_p": kept, "stop_sequences": kept, "metadata": kept,
	"stream": kept, "service_tier": kept,
	// How hard the model thinks, not what it is asked.
	"thinking":    kept,
	"top_k":       refused("top_k has no OpenAI equivalent"),
	"tools":       refused("tools are not translated", "[]"),
	"tool_choice": refused("tool_choice is not translated", `{"type":"auto"}`, `{"type":"none"}`),
	"mcp_servers": refused("mcp_servers have no equivalent", "[]"),
	"container":   refused("container has no equivalent"),
}

// geminiFields and geminiConfigFields are a generateContent body's fields
// and its generationConfig's, for a translation to OpenAI, both
// spellings (Google's REST API takes camelCase and snake_case).
var (
	geminiFields = map[string]fieldRule{
		"model": kept, "contents": kept, "systemInstruction": kept, "system_instruction": kept,
		"generationConfig": kept, "generation_config": kept,
		// Google's content filter thresholds: OpenAI has no such setting,
		// and they do not change what is asked.
		"safetySettings": kept, "safety_settings": kept, "labels": kept,
		"tools": kept, "toolConfig": kept, "tool_config": kept, "cachedContent": kept, "cached_content": kept, // refused by geminiToOpenAI
	}
	geminiConfigFields = map[string]fieldRule{
		"maxOutputTokens": kept, "temperature": kept, "topP": kept, "candidateCount": kept, "seed": kept,
		"presencePenalty": kept, "frequencyPenalty": kept, "stopSequences": kept,
		"responseMimeType": kept, "responseJsonSchema": kept, "responseSchema": kept,
		"thinkingConfig":   kept, // how hard the model thinks
		"topK":             refused("topK has no OpenAI equivalent"),
		"responseLogprobs": refused("responseLogprobs has no equivalent here", "false"),
		"logprobs":         refused("logprobs has no equivalent here", "0"),
		"responseModalities": refused("responseModalities other than text have no OpenAI equivalent",
			`["TEXT"]`, `["text"]`),
		"speechConfig":               refused("speechConfig has no equivalent"),
		"mediaResolution":            refused("mediaResolution has no equivalent"),
		"enableEnhancedCivicAnswers": refused("enableEnhancedCivicAnswers has no equivalent", "false"),
	}
)

// checkFields fails the translation for the first field of obj (in name
// order, so the message is stable) that rules refuse or do not know.
// where prefixes the field's name in the message.
func (t *translator) checkFields(obj gjson.Result, rules map[string]fieldRule, where string) {
	type member struct {
		name string
		v    gjson.Result
	}
	var ms []member
	obj.ForEach(func(k, v gjson.Result) bool {
		ms = append(ms, member{k.String(), v})
		return true
	})
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	for _, m := range ms {
		name := m.name
		if where == "generationConfig." {
			name = camelCase(name)
		}
		r, ok := rules[name]
		switch {
		case !ok:
			t.fail("%s%s has no %v translation (llmrun refuses what it cannot carry over rather than drop it)", where, m.name, t.to)
			return
		case r.refuse == "" || m.v.Type == gjson.Null || isNeutral(m.v, r.neutral):
			continue
		default:
			t.fail("%s%s: %s", where, m.name, r.refuse)
			return
		}
	}
}

func isNeutral(v gjson.Result, neutral []string) bool {
	for _, n := range neutral {
		if v.Raw == n || (v.Type == gjson.Number && gjson.Parse(n).Type == gjson.Number && v.Num == gjson.Parse(n).Num) {
			return true
		}
		if compactJSON(v.Raw) == n {
			return true
		}
	}
	return false
}

// compactJSON drops the whitespace of raw JSON outside strings.
func compactJSON(raw string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case in && c == '\\' && i+1 < len(raw):
			b.WriteByte(c)
			i++
			b.WriteByte(raw[i])
			continue
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// camelCase turns snake_case into camelCase (max_output_tokens →
// maxOutputTokens); camelCase passes unchanged.
func camelCase(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// responsesFields are a Responses request's fields, for its translation
// to Chat Completions (ResponsesToChat).
var responsesFields = map[string]fieldRule{
	"model": kept, "input": kept, "instructions": kept, "max_output_tokens": kept,
	"temperature": kept, "top_p": kept, "user": kept, "metadata": kept, "service_tier": kept, "text": kept,
	"previous_response_id": kept, "conversation": kept, "tools": kept, // refused by ResponsesToChat
	// Transport, storage, caching and output detail: not what is asked.
	"store": kept, "stream": kept, "stream_options": kept, "include": kept, "safety_identifier": kept,
	"prompt_cache_key": kept, "truncation": kept, "parallel_tool_calls": kept, "max_tool_calls": kept, "tool_choice": kept,
	// How hard a reasoning model thinks, not what it is asked.
	"reasoning":    kept,
	"background":   refused("background mode has no equivalent", "false"),
	"prompt":       refused("a stored prompt (prompt) is kept by the Responses API"),
	"top_logprobs": refused("top_logprobs has no equivalent", "0"),
}
