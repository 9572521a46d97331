package providers_test

import (
	"strings"

	"github.com/llmrun/llmrun/providers"
)

// streamCase is a stream in one provider's wire format and what it must
// read as: the reassembled body, its text and (when usage is set) its
// usage; or, with want "", a ClassMidStream failure whose message holds
// msg, of type typ, with request id reqID ("req_hdr" is the header's).
type streamCase struct {
	stream string
	want   string
	text   string
	usage  *providers.Usage

	msg, typ, reqID string
}

// sseOf frames chunks as a data-only stream.
func sseOf(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return b.String()
}

// sseEvents frames (name, data) pairs as SSE; an empty name sends no
// event: line.
func sseEvents(kv ...string) string {
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		if kv[i] != "" {
			b.WriteString("event: " + kv[i] + "\n")
		}
		b.WriteString("data: " + kv[i+1] + "\n\n")
	}
	return b.String()
}

// ok is a stream that reads as want with text; okUsage also checks usage.
func ok(stream, want, text string) streamCase {
	return streamCase{stream: stream, want: want, text: text}
}

func okUsage(stream, want, text string, usage providers.Usage) streamCase {
	return streamCase{stream: stream, want: want, text: text, usage: &usage}
}

// oaHead is the envelope of the OpenAI cases' chunks.
const oaHead = `"id":"c1","object":"chat.completion.chunk","created":7,"model":"m"`

// openAIStreams: several choices, tool calls, refusals and logprobs,
// escapes and surrogate pairs split across chunks, comments.
var openAIStreams = map[string]streamCase{
	"two choices interleaved, escapes split across chunks": ok(
		sseOf(
			`{`+oaHead+`,"choices":[{"index":1,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{"role":"assistant","content":"Line\n"},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":1,"delta":{"content":"caf\u00e9 \"q\""},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{"content":"\ud83d"},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{"content":"\ude00 ok"},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"},{"index":1,"delta":{},"logprobs":null,"finish_reason":"length"}]}`,
			`{`+oaHead+`,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
			`[DONE]`),
		`{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[
				{"index":0,"message":{"role":"assistant","content":"Line\n😀 ok","refusal":null},"logprobs":null,"finish_reason":"stop"},
				{"index":1,"message":{"role":"assistant","content":"café \"q\"","refusal":null},"logprobs":null,"finish_reason":"length"}],
				"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
		"Line\n😀 ok"),
	"tool calls": ok(
		sseOf(
			`{`+oaHead+`,"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}`,
			`{`+oaHead+`,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}`,
			`[DONE]`),
		`{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}]}`,
		""),
	"refusal, logprobs, extra string field, service tier": ok(
		sseOf(
			`{`+oaHead+`,"service_tier":"default","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","refusal":"No"},"logprobs":{"content":null,"refusal":[{"token":"No","logprob":-0.1}]},"finish_reason":null}],"obfuscation":"xx"}`,
			`{`+oaHead+`,"service_tier":"default","system_fingerprint":null,"choices":[{"index":0,"delta":{"refusal":".","reasoning_content":"hm"},"logprobs":{"content":null,"refusal":[{"token":".","logprob":-0.2}]},"finish_reason":"stop"}]}`,
			`[DONE]`),
		`{"id":"c1","object":"chat.completion","created":7,"model":"m","service_tier":"default","system_fingerprint":null,"choices":[{"index":0,
				"message":{"role":"assistant","content":null,"refusal":"No.","reasoning_content":"hm"},
				"logprobs":{"content":null,"refusal":[{"token":"No","logprob":-0.1},{"token":".","logprob":-0.2}]},"finish_reason":"stop"}]}`,
		""),
	"comments and keep-alives ignored": ok(
		": OPENROUTER PROCESSING\n\n"+sseOf(`{`+oaHead+`,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`)+": ping\n\n"+sseOf(`[DONE]`),
		`{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},"logprobs":null,"finish_reason":"stop"}]}`,
		"hi"),
}

// anMessageStart opens the Anthropic cases, with cache usage.
const anMessageStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1,"service_tier":"standard"}}}`

// anthropicStreams: thinking, tool use, citations, escapes, events
// without event: lines, cumulative usage; and the failures only this
// format has.
var anthropicStreams = map[string]streamCase{
	"thinking, text with escapes, tool use, cache usage": okUsage(
		sseEvents(
			"message_start", anMessageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me \"think\"\n"}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"done."}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			"ping", `{"type": "ping"}`,
			"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"caf\u00e9 \ud83d"}}`,
			"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"\ude00\n"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":1}`,
			"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
			"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
			"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`,
			"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ris\", \"days\": [1,2]}"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":2}`,
			"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"now","input":{}}}`,
			"content_block_stop", `{"type":"content_block_stop","index":3}`,
			"some_future_event", `{"type":"some_future_event","x":1}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null,"stop_details":{"x":1}},"usage":{"output_tokens":42,"server_tool_use":{"web_search_requests":0}}}`,
			"message_stop", `{"type":"message_stop"}`),
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
				{"type":"thinking","thinking":"Let me \"think\"\ndone.","signature":"EqQBCgIYAhIM"},
				{"type":"text","text":"café 😀\n"},
				{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris","days":[1,2]}},
				{"type":"tool_use","id":"toolu_2","name":"now","input":{}}],
				"stop_reason":"tool_use","stop_sequence":null,"stop_details":{"x":1},
				"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":42,"service_tier":"standard","server_tool_use":{"web_search_requests":0}}}`,
		"café 😀\n",
		providers.Usage{InputTokens: 1110, OutputTokens: 42, CacheReadTokens: 1000, CacheWriteTokens: 100}),
	"two text blocks, stop sequence, no event names": okUsage(
		sseEvents(
			"", anMessageStart,
			"", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			"", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
			"", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"b"}}`,
			"", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"c"}}`,
			"", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":3,"input_tokens":11}}`,
			"", `{"type":"message_stop"}`),
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"a"},{"type":"text","text":"bc"}],
				"stop_reason":"stop_sequence","stop_sequence":"END",
				"usage":{"input_tokens":11,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":3,"service_tier":"standard"}}`,
		"abc",
		providers.Usage{InputTokens: 1111, OutputTokens: 3, CacheReadTokens: 1000, CacheWriteTokens: 100}),
	"citations": okUsage(
		sseEvents(
			"message_start", anMessageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":[]}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x","document_index":0}}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"X."}}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
			"message_stop", `{"type":"message_stop"}`),
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"X.","citations":[{"type":"char_location","cited_text":"x","document_index":0}]}],
				"stop_reason":"end_turn","stop_sequence":null,
				"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":2,"service_tier":"standard"}}`,
		"X.",
		providers.Usage{InputTokens: 1110, OutputTokens: 2, CacheReadTokens: 1000, CacheWriteTokens: 100}),
	"error event with its own request id": {
		stream: sseEvents("message_start", anMessageStart, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded","details":null},"request_id":"req_in_body"}`),
		msg: "Overloaded", typ: "overloaded_error", reqID: "req_in_body",
	},
	"delta for a block that never started": {
		stream: sseEvents("message_start", anMessageStart, "content_block_delta", `{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"x"}}`),
		msg:    "never started", reqID: "req_hdr",
	},
}
