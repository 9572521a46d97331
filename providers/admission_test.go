package providers

import "testing"

func TestAdmissionDefaults(t *testing.T) {
	var a Admission
	req := &Request{Body: []byte(`{"system":"Be brief.","messages":[{"role":"user","content":"Hi"},{"role":"user","content":[{"type":"text","text":"there"},{"type":"image"}]}]}`)}
	if got := string(a.PromptText(req)); got != "Be brief.\nHi\nthere\n" {
		t.Errorf("PromptText = %q", got)
	}
	if a.OutputCap(req) != DefaultOutputReserve {
		t.Errorf("OutputCap without max_tokens = %d", a.OutputCap(req))
	}
	req.MaxTokens = 64
	if a.OutputCap(req) != 64 {
		t.Errorf("OutputCap = %d", a.OutputCap(req))
	}
	if a.InputCharged(Usage{InputTokens: 10, CacheReadTokens: 4}) != 10 {
		t.Error("the zero Admission charges all input")
	}
	a.Text = func(*Request) []byte { return []byte("x") }
	if string(a.PromptText(req)) != "x" {
		t.Error("Text overrides the chat reader")
	}
	if UncachedInput(Usage{InputTokens: 10, CacheReadTokens: 4}) != 6 || UncachedInput(Usage{CacheReadTokens: 4}) != 0 {
		t.Error("UncachedInput")
	}
}

// TestAdmissionEndpoints: a Responses request's prompt is its instructions
// and input; an embeddings request's its inputs (token ids one token
// each), and it reserves no output whatever its max tokens or the rule.
func TestAdmissionEndpoints(t *testing.T) {
	tests := map[string]struct {
		req  Request
		text string
		out  int64
	}{
		"responses string": {Request{Endpoint: EndpointResponses, MaxTokens: 32, Body: []byte(`{"instructions":"Be brief.","input":"Hi"}`)}, "Be brief.\nHi\n", 32},
		"responses items": {Request{Endpoint: EndpointResponses, Body: []byte(`{"input":[{"role":"user","content":"a"},{"type":"message","role":"user","content":[{"type":"input_text","text":"b"},{"type":"input_image","image_url":"x"}]},{"type":"function_call_output","call_id":"c","output":"o"}]}`)},
			"a\nb\no\n", DefaultOutputReserve},
		"embeddings string":    {Request{Endpoint: EndpointEmbeddings, MaxTokens: 99, Body: []byte(`{"input":"one"}`)}, "one\n", 0},
		"embeddings strings":   {Request{Endpoint: EndpointEmbeddings, Body: []byte(`{"input":["one","two"]}`)}, "one\ntwo\n", 0},
		"embeddings token ids": {Request{Endpoint: EndpointEmbeddings, Body: []byte(`{"input":[[1,2],[3]]}`)}, " tok tok tok", 0},
	}
	for name, tt := range tests {
		for _, a := range []Admission{{}, {Output: ReserveExpected}} {
			if got := string(a.PromptText(&tt.req)); got != tt.text {
				t.Errorf("%s: PromptText = %q, want %q", name, got, tt.text)
			}
			if got := a.OutputCap(&tt.req); got != tt.out {
				t.Errorf("%s: OutputCap = %d, want %d", name, got, tt.out)
			}
		}
	}
	for body, want := range map[string]int{`{"input":"a"}`: 1, `{"input":["a","b","c"]}`: 3, `{"input":[1,2,3]}`: 1, `{"input":[[1],[2]]}`: 2, `{"input":[]}`: 1} {
		if got := EmbeddingInputs([]byte(body)); got != want {
			t.Errorf("EmbeddingInputs(%s) = %d, want %d", body, got, want)
		}
	}
}

// TestResponseLimitCapped is issue 22 item 1: whatever max tokens a line
// says, one answer's bound stays near what a model can write (128k
// tokens) and under what keeps a process's memory bounded; below the cap
// max tokens still move it.
func TestResponseLimitCapped(t *testing.T) {
	c := &Config{}
	for _, stream := range []bool{false, true} {
		huge := c.ResponseLimit(99999999999999, stream)
		if capped := c.ResponseLimit(MaxBoundTokens, stream); huge != capped {
			t.Errorf("stream=%v: 99999999999999 max tokens bound %d bytes, the cap's %d", stream, huge, capped)
		}
		if huge > 40<<20 {
			t.Errorf("stream=%v: bound %d bytes, want ≤ 40 MiB", stream, huge)
		}
		if small, more := c.ResponseLimit(1000, stream), c.ResponseLimit(2000, stream); small >= more {
			t.Errorf("stream=%v: 1000 max tokens bound %d, 2000 %d: should grow", stream, small, more)
		}
	}
}
