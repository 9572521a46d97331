package openai

import (
	"strings"
	"testing"
)

// TestChunkHead: chunks that repeat the last one's leading members are
// walked from their first choices, usage or error member, and the answer
// is the one a full walk of every chunk gives; a repeated head with an
// invalid rest is still refused.
func TestChunkHead(t *testing.T) {
	const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m","system_fingerprint":"fp",`
	const reordered = `{"object":"chat.completion.chunk","id":"chatcmpl-1","created":7,"model":"m","system_fingerprint":"fp",`
	chunks := []string{
		// Azure's first chunk: empty id and model, filters, no choices.
		`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0}]}`,
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
		head + `"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":null}`,
		head + `"choices":[{"index":0,"delta":{"content":"lo \"you\""},"finish_reason":null}],"usage":null}`,
		// Members in another order: a new head.
		reordered + ` "choices":[{"index":0,"delta":{"content":"!"},"finish_reason":null}]}`,
		reordered + ` "choices":[{"index":1,"delta":{"content":"second"},"finish_reason":null}]}`,
		head + `"service_tier":"default","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		head + `"service_tier":"default","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	}
	var fast, full assembler
	skipped := 0
	for _, c := range chunks {
		if len(fast.head) > 0 && strings.HasPrefix(c, string(fast.head)) {
			skipped++
		}
		if err := fast.chunk([]byte(c)); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
		full.head, full.tpl.pre = nil, nil // walk every chunk whole
		if err := full.chunk([]byte(c)); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
	}
	if got, want := string(fast.body()), string(full.body()); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(string(fast.body()), `"content":"Hello \"you\"!"`) || skipped != 4 {
		t.Errorf("skipped the head of %d chunks, want 4; body %s", skipped, fast.body())
	}
	if string(fast.head) != head+`"service_tier":"default",` {
		t.Errorf("head %q", fast.head)
	}
	for _, bad := range []string{`"choices":[}`, `"choices":[]`, `}`, `"choices":[],}`} {
		if err := fast.chunk([]byte(string(fast.head) + bad)); err == nil || err.Message != "stream chunk is not valid JSON" {
			t.Errorf("head + %s: %v", bad, err)
		}
	}
}

// TestChunkSameShape: a chunk that differs from the last walked one only
// in one appended string's inside is applied by that inside alone, and
// the answer is the one walking every chunk whole gives: also when a
// chunk of another shape changed a member in between, when tool call
// arguments or logprobs repeat byte for byte (appended again, never
// taken for text), and an inside that is not a valid string is refused.
func TestChunkSameShape(t *testing.T) {
	const head = `{"id":"c","object":"chat.completion.chunk","created":7,"model":"m",`
	// OpenAI's obfuscation pads each chunk with a string of its own.
	textObf := func(tier, s, obf string) string {
		return head + `"service_tier":"` + tier + `","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}],"obfuscation":"` + obf + `"}`
	}
	text := func(tier, s string) string { return textObf(tier, s, strings.Repeat("z", len(s)%5)) }
	call := head + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]},"finish_reason":null}]}`
	lp := head + `"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":0}]},"finish_reason":null}]}`
	chunks := []string{
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		text("default", "Hel"), text("default", "lo"), text("default", ` \"q\" \u00e9`), text("default", ""),
		text("flex", "!"), text("default", "?"), text("default", "."), // the tier changes and changes back
		call, call, lp, lp,
		text("default", "end"), text("default", "s"),
		head + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	}
	var fast, full assembler
	same := 0
	for _, c := range chunks {
		if len(fast.tpl.pre) > 0 && strings.HasPrefix(c, string(fast.tpl.pre)) && strings.HasSuffix(c, string(fast.tpl.post)) && strings.Contains(c, string(fast.tpl.mid)) {
			same++
		}
		if err := fast.chunk([]byte(c)); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
		full.head, full.tpl.pre = nil, nil
		if err := full.chunk([]byte(c)); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
	}
	if got, want := string(fast.body()), string(full.body()); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(string(fast.body()), `"content":"Hello \"q\" \u00e9!?.xxends"`) || !strings.Contains(string(fast.body()), `"service_tier":"default"`) {
		t.Errorf("body %s", fast.body())
	}
	if same != 5 {
		t.Errorf("%d chunks applied by their text alone, want 5", same)
	}
	fast.chunk([]byte(text("default", "ok")))
	for _, bad := range []string{`a"b`, `a\`, `a\u00`, `tab\x`, "ctl\x01", "new\nline", `"},"x":"`} {
		if err := fast.chunk([]byte(text("default", bad))); err == nil || err.Message != "stream chunk is not valid JSON" {
			t.Errorf("text %s: %v", bad, err)
		}
		if err := fast.chunk([]byte(textObf("default", "ok", bad))); err == nil || err.Message != "stream chunk is not valid JSON" {
			t.Errorf("obfuscation %s: %v", bad, err)
		}
	}
}
