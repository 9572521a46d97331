package anthropic

import (
	"strings"
	"testing"
)

// TestDeltaSameShape: a content_block_delta that differs from the last
// walked one only in its text's inside is applied by that inside alone,
// and the message is the one walking every event whole gives: across
// pings, thinking deltas, a second block, tool input fragments that repeat
// byte for byte (appended again, never taken for text); an inside that is
// not a valid string, or the same bytes under another event name, is
// walked (and refused or ignored there).
func TestDeltaSameShape(t *testing.T) {
	text := func(idx, s string) string {
		return `{"type":"content_block_delta","index":` + idx + `,"delta":{"type":"text_delta","text":"` + s + `"}}`
	}
	think := func(s string) string {
		return `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"` + s + `"}}`
	}
	input := `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`
	type ev struct{ name, data string }
	evs := []ev{
		{"message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`},
		{"content_block_delta", think("hm")}, {"content_block_delta", think("m")},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", text("1", "Hel")}, {"ping", `{"type": "ping"}`}, {"content_block_delta", text("1", "lo")},
		{"content_block_delta", text("1", ` \"q\" \u00e9`)}, {"content_block_delta", text("1", "")},
		{"content_block_delta", text("1", "!")},
		{"other", text("1", "ignored")}, // an unknown event of the same bytes
		{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`},
		{"content_block_delta", input}, {"content_block_delta", input},
		{"content_block_delta", text("1", "?")}, {"content_block_delta", text("1", "end")},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`},
	}
	var fast, full assembler
	same := 0
	for _, e := range evs {
		if len(fast.tpl.pre) > 0 && e.name == string(fast.tpl.name) && strings.HasPrefix(e.data, string(fast.tpl.pre)) && strings.HasSuffix(e.data, string(fast.tpl.post)) {
			same++
		}
		if _, err := fast.event([]byte(e.name), []byte(e.data)); err != nil {
			t.Fatalf("event %s: %v", e.data, err)
		}
		full.tpl.pre = nil // walk every event whole
		if _, err := full.event([]byte(e.name), []byte(e.data)); err != nil {
			t.Fatalf("event %s: %v", e.data, err)
		}
	}
	fb, err := fast.body()
	if err != nil {
		t.Fatal(err)
	}
	wb, err := full.body()
	if err != nil {
		t.Fatal(err)
	}
	if string(fb) != string(wb) {
		t.Errorf("body\n got %s\nwant %s", fb, wb)
	}
	if !strings.Contains(string(fb), `"text":"Hello \"q\" \u00e9!?end"`) || !strings.Contains(string(fb), `"thinking":"hmm"`) ||
		!strings.Contains(string(fb), `"input":{"a""a"}`) && !strings.Contains(string(fb), `"input":"{\"a\"{\"a\""`) {
		t.Errorf("body %s", fb)
	}
	if same != 6 { // m, lo, the escapes, "", !, end
		t.Errorf("%d deltas applied by their text alone, want 6", same)
	}
	for _, bad := range []string{`a"b`, `a\`, `a\u00`, `tab\x`, "ctl\x01", "new\nline", `"},"x":"`} {
		if _, err := fast.event([]byte("content_block_delta"), []byte(text("1", bad))); err == nil || err.Message != "stream event is not valid JSON" {
			t.Errorf("text %s: %v", bad, err)
		}
	}
}
