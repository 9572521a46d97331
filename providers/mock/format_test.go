package mock_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmrun/llmrun/providers/mock"
)

func TestCountTokens(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "héllo": 2, strings.Repeat("x", 400): 100} {
		if got := mock.CountTokens(s); got != want {
			t.Errorf("CountTokens(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestAnswer(t *testing.T) {
	a := mock.Answer("Name a prime number please, any one", 0)
	if !strings.HasPrefix(a, "Answer to Name a prime number please,: ") || !strings.HasSuffix(a, ".") {
		t.Errorf("answer %q lacks the documented prefix/suffix", a)
	}
	if b := mock.Answer("Name a prime number please, any one", 0); a != b {
		t.Errorf("not deterministic: %q vs %q", a, b)
	}
	if b := mock.Answer("Name a prime number please, any two", 0); a == b {
		t.Errorf("different prompts gave the same answer %q", a)
	}
	if got := mock.Answer("", 0); !strings.HasPrefix(got, "Answer: ") {
		t.Errorf("empty prompt: %q", got)
	}
	for _, max := range []int{1, 2, 3, 7} {
		got := mock.Answer("Ünïcödé prompt ☃☃☃☃☃", max)
		if mock.CountTokens(got) > max || !utf8.ValidString(got) || got == "" {
			t.Errorf("Answer(max %d) = %q (%d tokens)", max, got, mock.CountTokens(got))
		}
		if !strings.HasPrefix(mock.Answer("Ünïcödé prompt ☃☃☃☃☃", 0), got) {
			t.Errorf("capped answer %q is not a prefix of the full one", got)
		}
	}
}

func TestOpenAIPlain(t *testing.T) {
	srv, m := start(t, mock.Config{})
	r := post(t, srv, "/v1/chat/completions", oaBody("Name a prime number.", ""))
	wantStatus(t, r, 200)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if id := r.header.Get("x-request-id"); !strings.HasPrefix(id, "req_") {
		t.Errorf("x-request-id %q", id)
	}
	text := mock.Answer("Name a prime number.", 0)
	in := mock.CountTokens("Be terse.") + 4 + mock.CountTokens("Name a prime number.") + 4
	out := mock.CountTokens(text)
	got := decode(t, r.body)
	id, _ := got["id"].(string)
	created, _ := got["created"].(float64)
	want := fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":%d,"model":"gpt-mock","system_fingerprint":"fp_mock",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%q,"refusal":null},"logprobs":null,"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}}}`, id, int64(created), text, in, out, in+out)
	if string(r.body) != want {
		t.Errorf("body\n got %s\nwant %s", r.body, want)
	}
	if !strings.HasPrefix(id, "chatcmpl-") || created < 1.7e9 {
		t.Errorf("id %q created %v", id, created)
	}
	// Same body again: same ids, and a duplicate completion.
	r2 := post(t, srv, "/chat/completions", oaBody("Name a prime number.", ""))
	wantStatus(t, r2, 200)
	if string(r2.body) != string(r.body) {
		t.Errorf("second answer differs:\n%s\n%s", r2.body, r.body)
	}
	if r2.header.Get("x-request-id") == r.header.Get("x-request-id") {
		t.Errorf("request ids repeat: %s", r.header.Get("x-request-id"))
	}
	if s := m.Stats(); s.Attempts != 2 || s.Completed != 2 || s.Duplicates != 1 || s.InputTokens != int64(2*in) || s.OutputTokens != int64(2*out) {
		t.Errorf("stats %+v", s)
	}
}

func TestOpenAIStream(t *testing.T) {
	for name, extra := range map[string]string{
		"usage":    `,"stream":true,"stream_options":{"include_usage":true}`,
		"no usage": `,"stream":true`,
	} {
		t.Run(name, func(t *testing.T) {
			srv, m := start(t, mock.Config{})
			prompt := "Tell me about streams " + name
			plain := post(t, srv, "/v1/chat/completions", oaBody(prompt, ""))
			wantStatus(t, plain, 200)
			p := decode(t, plain.body)
			r := post(t, srv, "/v1/chat/completions", oaBody(prompt, extra))
			wantStatus(t, r, 200)
			if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type %q", ct)
			}
			withUsage := strings.Contains(extra, "include_usage")
			usageTail := ""
			if withUsage {
				usageTail = `,"usage":null`
			}
			prefix := fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":%d,"model":"gpt-mock","system_fingerprint":"fp_mock","choices":[`,
				p["id"], int64(p["created"].(float64)))
			evs := parseSSE(t, r.body)
			if len(evs) < 4 {
				t.Fatalf("only %d events", len(evs))
			}
			for _, ev := range evs {
				if ev.name != "" {
					t.Errorf("OpenAI event with a name: %+v", ev)
				}
			}
			if want := prefix + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]` + usageTail + `}`; evs[0].data != want {
				t.Errorf("first chunk\n got %s\nwant %s", evs[0].data, want)
			}
			if evs[len(evs)-1].data != "[DONE]" {
				t.Errorf("last event %q", evs[len(evs)-1].data)
			}
			rest := evs[1 : len(evs)-1]
			if withUsage {
				u := rest[len(rest)-1]
				want := prefix + fmt.Sprintf(`],"usage":{"prompt_tokens":%v,"completion_tokens":%v,"total_tokens":%v,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}}}`,
					path(p, "usage", "prompt_tokens"), path(p, "usage", "completion_tokens"), path(p, "usage", "total_tokens"))
				if u.data != want {
					t.Errorf("usage chunk\n got %s\nwant %s", u.data, want)
				}
				rest = rest[:len(rest)-1]
			}
			if want := prefix + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]` + usageTail + `}`; rest[len(rest)-1].data != want {
				t.Errorf("finish chunk\n got %s\nwant %s", rest[len(rest)-1].data, want)
			}
			var text strings.Builder
			for _, ev := range rest[:len(rest)-1] {
				if !strings.HasPrefix(ev.data, prefix+`{"index":0,"delta":{"content":`) || !strings.HasSuffix(ev.data, `},"logprobs":null,"finish_reason":null}]`+usageTail+`}`) {
					t.Errorf("content chunk %s", ev.data)
				}
				c, _ := path(decode(t, []byte(ev.data)), "choices", 0, "delta", "content").(string)
				text.WriteString(c)
			}
			if text.String() != path(p, "choices", 0, "message", "content") {
				t.Errorf("streamed text %q, plain %q", text.String(), path(p, "choices", 0, "message", "content"))
			}
			if len(rest) < 3 {
				t.Errorf("answer came in %d content chunks", len(rest)-1)
			}
			if s := m.Stats(); s.Completed != 2 || s.Duplicates != 1 {
				t.Errorf("stats %+v: a streamed and a plain request for the same body are the same body", s)
			}
		})
	}
}

func TestAnthropicPlain(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	r := post(t, srv, "/v1/messages", anBody("Name a prime number.", ""), "anthropic-version", "2023-06-01")
	wantStatus(t, r, 200)
	if id := r.header.Get("request-id"); !strings.HasPrefix(id, "req_") {
		t.Errorf("request-id %q", id)
	}
	text := mock.Answer("Name a prime number.", 256)
	in := mock.CountTokens("Be terse.") + 4 + mock.CountTokens("Name a prime number.") + 4
	got := decode(t, r.body)
	id, _ := got["id"].(string)
	want := fmt.Sprintf(`{"id":%q,"type":"message","role":"assistant","model":"claude-mock","content":[{"type":"text","text":%q}],`+
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}}`,
		id, text, in, mock.CountTokens(text))
	if string(r.body) != want {
		t.Errorf("body\n got %s\nwant %s", r.body, want)
	}
	if !strings.HasPrefix(id, "msg_") {
		t.Errorf("id %q", id)
	}
}

func TestAnthropicStream(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	prompt := "Tell me about Anthropic streams, in detail."
	plain := post(t, srv, "/v1/messages", anBody(prompt, ""))
	wantStatus(t, plain, 200)
	p := decode(t, plain.body)
	r := post(t, srv, "/v1/messages", anBody(prompt, `,"stream":true`))
	wantStatus(t, r, 200)
	if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	evs := parseSSE(t, r.body)
	var names []string
	var text strings.Builder
	for _, ev := range evs {
		d := decode(t, []byte(ev.data))
		if d["type"] != ev.name {
			t.Errorf("event %q carries type %v", ev.name, d["type"])
		}
		if ev.name != "content_block_delta" || len(names) == 0 || names[len(names)-1] != "content_block_delta" {
			names = append(names, ev.name)
		}
		if ev.name == "content_block_delta" {
			if path(d, "delta", "type") != "text_delta" || path(d, "index") != 0.0 {
				t.Errorf("delta %s", ev.data)
			}
			s, _ := path(d, "delta", "text").(string)
			text.WriteString(s)
		}
	}
	if got, want := strings.Join(names, " "), "message_start content_block_start ping content_block_delta content_block_stop message_delta message_stop"; got != want {
		t.Errorf("event order\n got %s\nwant %s", got, want)
	}
	want := fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":"claude-mock","content":[],"stop_reason":null,"stop_sequence":null,`+
		`"usage":{"input_tokens":%v,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, p["id"], path(p, "usage", "input_tokens"))
	if evs[0].data != want {
		t.Errorf("message_start\n got %s\nwant %s", evs[0].data, want)
	}
	if want := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`; evs[1].data != want {
		t.Errorf("content_block_start %s", evs[1].data)
	}
	if want := fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%v}}`, path(p, "usage", "output_tokens")); evs[len(evs)-2].data != want {
		t.Errorf("message_delta\n got %s\nwant %s", evs[len(evs)-2].data, want)
	}
	if text.String() != path(p, "content", 0, "text") {
		t.Errorf("streamed text %q, plain %q", text.String(), path(p, "content", 0, "text"))
	}
}

func TestMaxTokens(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	r := post(t, srv, "/v1/chat/completions", oaBody("cap me", `,"max_completion_tokens":3,"max_tokens":100`))
	wantStatus(t, r, 200)
	d := decode(t, r.body)
	if path(d, "choices", 0, "finish_reason") != "length" || path(d, "usage", "completion_tokens") != 3.0 ||
		path(d, "choices", 0, "message", "content") != mock.Answer("cap me", 3) {
		t.Errorf("OpenAI capped answer %s", r.body)
	}
	r = post(t, srv, "/v1/chat/completions", oaBody("cap me", `,"max_tokens":2,"stream":true`))
	wantStatus(t, r, 200)
	if !strings.Contains(string(r.body), `"finish_reason":"length"`) {
		t.Errorf("streamed capped answer %s", r.body)
	}
	r = post(t, srv, "/v1/messages", `{"model":"c","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"cap me"}]}]}`)
	wantStatus(t, r, 200)
	d = decode(t, r.body)
	if path(d, "stop_reason") != "max_tokens" || path(d, "usage", "output_tokens") != 4.0 || path(d, "content", 0, "text") != mock.Answer("cap me", 4) {
		t.Errorf("Anthropic capped answer %s", r.body)
	}
	r = post(t, srv, "/v1/messages", `{"model":"c","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"cap me"}]}`)
	wantStatus(t, r, 200)
	if !strings.Contains(string(r.body), `"stop_reason":"max_tokens"`) {
		t.Errorf("streamed capped answer %s", r.body)
	}
}

func TestBadRequests(t *testing.T) {
	srv, m := start(t, mock.Config{})
	for name, tc := range map[string]struct {
		path, body, want string
	}{
		"openai not json":        {"/v1/chat/completions", `{`, `"type":"invalid_request_error"`},
		"openai no messages":     {"/v1/chat/completions", `{"model":"m","messages":[]}`, `"param":"messages"`},
		"anthropic no max":       {"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, `"message":"max_tokens: Field required"`},
		"anthropic bad role":     {"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, `"type":"invalid_request_error"`},
		"anthropic content type": {"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`, `"type":"invalid_request_error"`},
	} {
		t.Run(name, func(t *testing.T) {
			r := post(t, srv, tc.path, tc.body)
			wantStatus(t, r, 400)
			if !strings.Contains(string(r.body), tc.want) {
				t.Errorf("body %s lacks %s", r.body, tc.want)
			}
		})
	}
	if s := m.Stats(); s.BadRequests != 5 || s.Completed != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestNotFoundAndStats(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	r := post(t, srv, "/v1/nope", `{}`)
	wantStatus(t, r, 404)
	if want := `{"error":{"message":"Invalid URL (POST /v1/nope)","type":"invalid_request_error","param":null,"code":null}}`; string(r.body) != want {
		t.Errorf("OpenAI 404 %s", r.body)
	}
	r = post(t, srv, "/v1/nope", `{}`, "x-api-key", "k")
	wantStatus(t, r, 404)
	id := r.header.Get("request-id")
	if want := `{"type":"error","error":{"type":"not_found_error","message":"Not found"},"request_id":"` + id + `"}`; string(r.body) != want || id == "" {
		t.Errorf("Anthropic 404 %s", r.body)
	}
	post(t, srv, "/v1/messages", anBody("hi", ""))
	resp, err := srv.Client().Get(srv.URL + "/mock/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	d := decode(t, b)
	if d["attempts"] != 1.0 || d["completed"] != 1.0 || d["not_found"] != 2.0 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("stats %s", b)
	}
	for _, k := range []string{"duplicates", "rate_limited", "overloaded", "server_errors", "mid_stream", "resets", "unauthorized", "spend_capped", "max_in_flight"} {
		if _, ok := d[k]; !ok {
			t.Errorf("stats lack %q", k)
		}
	}
}

func TestAnswerWords(t *testing.T) {
	const prompt = "Tell me one fact about the number 7."
	if mock.AnswerWords(prompt, 0, 0) != mock.Answer(prompt, 0) {
		t.Errorf("AnswerWords(0) = %q, want Answer's %q", mock.AnswerWords(prompt, 0, 0), mock.Answer(prompt, 0))
	}
	head := "Answer to Tell me one fact about: "
	short := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(mock.Answer(prompt, 0), head), "."))
	for _, n := range []int{1, 60, 200} {
		got := mock.AnswerWords(prompt, 0, n)
		if got != mock.AnswerWords(prompt, 0, n) {
			t.Errorf("AnswerWords(%d) not deterministic", n)
		}
		rest, ok := strings.CutPrefix(got, head)
		words := strings.Fields(strings.TrimSuffix(rest, "."))
		if !ok || !strings.HasSuffix(got, ".") || len(words) != n {
			t.Fatalf("AnswerWords(%d) = %q: %d words after the head", n, got, len(words))
		}
		// The words are drawn as Answer's are: the shorter is a prefix.
		k := min(n, len(short))
		if strings.Join(words[:k], " ") != strings.Join(short[:k], " ") {
			t.Errorf("AnswerWords(%d) starts %q, Answer %q", n, words[:k], short[:k])
		}
	}
	if got := mock.AnswerWords(prompt, 5, 200); mock.CountTokens(got) > 5 || !strings.HasPrefix(mock.AnswerWords(prompt, 0, 200), got) {
		t.Errorf("AnswerWords(max 5) = %q", got)
	}
}

// TestConfigAnswerWords: a server with AnswerWords answers with
// AnswerWords' text, plain and streamed alike, and counts its tokens.
func TestConfigAnswerWords(t *testing.T) {
	srv, m := start(t, mock.Config{AnswerWords: 60})
	const prompt = "Tell me one fact about the number 7."
	want := mock.AnswerWords(prompt, 0, 60)
	plain := post(t, srv, "/v1/chat/completions", oaBody(prompt, ""))
	wantStatus(t, plain, 200)
	if got := path(decode(t, plain.body), "choices", 0, "message", "content"); got != want {
		t.Errorf("plain content %q, want %q", got, want)
	}
	r := post(t, srv, "/v1/chat/completions", oaBody(prompt, `,"stream":true`))
	wantStatus(t, r, 200)
	var text strings.Builder
	for _, ev := range parseSSE(t, r.body) {
		if ev.data == "[DONE]" {
			continue
		}
		if c, ok := path(decode(t, []byte(ev.data)), "choices", 0, "delta", "content").(string); ok {
			text.WriteString(c)
		}
	}
	if text.String() != want {
		t.Errorf("streamed text %q, want %q", text.String(), want)
	}
	if s := m.Stats(); s.OutputTokens != 2*int64(mock.CountTokens(want)) {
		t.Errorf("output tokens %d, want 2×%d", s.OutputTokens, mock.CountTokens(want))
	}
}
