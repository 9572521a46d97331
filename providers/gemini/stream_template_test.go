package gemini

import (
	"fmt"
	"strings"
	"testing"
)

// TestChunkSameShape: a chunk that differs from the last walked one only
// in its text's inside and its running usage is applied by joining that
// text and setting that usage, and the answer is the one walking every
// chunk whole gives: across thought parts, a function call part (kept
// whole, never taken for text), a chunk without usage and a finishReason;
// a text or usage that is not valid JSON is walked and refused there.
func TestChunkSameShape(t *testing.T) {
	n := 0
	chunk := func(text, usage string) string {
		n++
		if usage == "" {
			usage = fmt.Sprintf(`{"promptTokenCount":3,"candidatesTokenCount":%d,"totalTokenCount":%d}`, n, n+3)
		}
		return `{"candidates":[{"content":{"parts":[{"text":"` + text + `"}],"role":"model"},"index":0}],"usageMetadata":` + usage + `,"modelVersion":"g","responseId":"r"}`
	}
	thought := `{"candidates":[{"content":{"parts":[{"text":"hm","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":3},"modelVersion":"g","responseId":"r"}`
	call := `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}],"role":"model"},"index":0}],"modelVersion":"g","responseId":"r"}`
	noUsage := func(text string) string {
		return `{"candidates":[{"content":{"parts":[{"text":"` + text + `"}],"role":"model"},"index":0}],"modelVersion":"g","responseId":"r"}`
	}
	chunks := []string{
		thought, thought,
		chunk("Hel", ""), chunk("lo", ""), chunk(` \"q\" \u00e9`, ""), chunk("", ""), chunk("!", `{"promptTokenCount":3}`),
		call, call,
		noUsage("a"), noUsage("b"),
		chunk("end", ""), chunk("s", ""),
		`{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":9,"totalTokenCount":12},"modelVersion":"g","responseId":"r"}`,
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
		full.tpl.pre = nil // walk every chunk whole
		if err := full.chunk([]byte(c)); err != nil {
			t.Fatalf("chunk %s: %v", c, err)
		}
	}
	if got, want := string(fast.body()), string(full.body()); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(string(fast.body()), `{"text":"hmhm","thought":true}`) || !strings.Contains(string(fast.body()), `"candidatesTokenCount":9`) ||
		fast.text() != `Hello "q" é!abends` || !fast.finished {
		t.Errorf("body %s text %q finished %v", fast.body(), fast.text(), fast.finished)
	}
	if same != 7 { // hm, lo, the escapes, "", !, b, s
		t.Errorf("%d chunks applied by their text alone, want 7", same)
	}
	fast.chunk([]byte(chunk("ok", "")))
	for _, bad := range []string{`a"b`, `a\`, `a\u00`, "ctl\x01", `"}],"x":"`} {
		if err := fast.chunk([]byte(chunk(bad, ""))); err == nil || err.Message != "stream chunk is not valid JSON" {
			t.Errorf("text %s: %v", bad, err)
		}
	}
	// A usage value that is not one JSON value is walked: refused, or
	// read for what it is (an error member ends the stream).
	for _, bad := range []string{`{"a":1`, `{"a":1},"error":{"code":1}`, `{} {}`} {
		var a assembler
		a.chunk([]byte(chunk("ok", "")))
		if len(a.tpl.pre) == 0 {
			t.Fatal("no template after a text chunk")
		}
		if err := a.chunk([]byte(chunk("x", bad))); err == nil {
			t.Errorf("usage %s: no error", bad)
		}
	}
	var a assembler
	a.chunk([]byte(chunk("ok", "")))
	if err := a.chunk([]byte(chunk("x", ` {}`))); err != nil || !strings.Contains(string(a.body()), `"usageMetadata":{}`) {
		t.Errorf("usage after a blank: %v, body %s", err, a.body())
	}
}
