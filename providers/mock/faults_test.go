package mock_test

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// outcome is what a client saw, reduced to a comparable string.
func outcome(r result) string {
	switch {
	case r.err != nil:
		return "reset"
	case r.status != 200:
		return fmt.Sprint(r.status)
	case strings.Contains(string(r.body), `"type":"error"`) || strings.Contains(string(r.body), `data: {"error"`):
		return "midstream"
	}
	return "ok"
}

// runBodies sends bodies 0..n-1 in the given order, each attempts times in
// a row, from 8 workers, and returns the outcomes by body and attempt.
func runBodies(t *testing.T, srv *httptest.Server, order []int, attempts int, path string, body func(i int) string) []string {
	t.Helper()
	out := make([]string, len(order)*attempts)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				for a := range attempts {
					out[i*attempts+a] = outcome(post(t, srv, path, body(i)))
				}
			}
		})
	}
	for _, i := range order {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func count(outs []string, what string) int64 {
	n := int64(0)
	for _, o := range outs {
		if o == what {
			n++
		}
	}
	return n
}

func within(t *testing.T, name string, got, lo, hi int64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %d, want %d..%d", name, got, lo, hi)
	}
}

func TestFaultRates(t *testing.T) {
	cfg := mock.Config{Seed: 7, OverloadRate: 0.1, MidStreamRate: 0.1, ResetRate: 0.1, ServerErrorRate: 0.1}
	order := make([]int, 1000)
	for i := range order {
		order[i] = i
	}
	t.Run("openai plain", func(t *testing.T) {
		srv, m := start(t, cfg)
		outs := runBodies(t, srv, order, 1, "/v1/chat/completions", func(i int) string { return oaBody(fmt.Sprintf("question %d", i), "") })
		s := m.Stats()
		for name, v := range map[string]int64{"overloaded": s.Overloaded, "mid-stream": s.MidStream, "resets": s.Resets, "server errors": s.ServerErrors} {
			within(t, name, v, 80, 120)
		}
		if count(outs, "503") != s.Overloaded || count(outs, "500") != s.MidStream+s.ServerErrors ||
			count(outs, "reset") != s.Resets || count(outs, "ok") != s.Completed || s.Attempts != 1000 {
			t.Errorf("client saw 503:%d 500:%d reset:%d ok:%d; stats %+v",
				count(outs, "503"), count(outs, "500"), count(outs, "reset"), count(outs, "ok"), s)
		}
	})
	t.Run("anthropic stream", func(t *testing.T) {
		srv, m := start(t, cfg)
		outs := runBodies(t, srv, order, 1, "/v1/messages", func(i int) string { return anBody(fmt.Sprintf("question %d", i), `,"stream":true`) })
		s := m.Stats()
		for name, v := range map[string]int64{"overloaded": s.Overloaded, "mid-stream": s.MidStream, "resets": s.Resets, "server errors": s.ServerErrors} {
			within(t, name, v, 80, 120)
		}
		if count(outs, "529") != s.Overloaded || count(outs, "midstream") != s.MidStream || count(outs, "500") != s.ServerErrors ||
			count(outs, "reset") != s.Resets || count(outs, "ok") != s.Completed {
			t.Errorf("client saw 529:%d midstream:%d 500:%d reset:%d ok:%d; stats %+v",
				count(outs, "529"), count(outs, "midstream"), count(outs, "500"), count(outs, "reset"), count(outs, "ok"), s)
		}
	})
}

func TestFaultsDeterministic(t *testing.T) {
	cfg := mock.Config{Seed: 42, OverloadRate: 0.2, ServerErrorRate: 0.2, MidStreamRate: 0.1}
	body := func(i int) string { return oaBody(fmt.Sprintf("q%d", i), `,"stream":true`) }
	order := make([]int, 200)
	for i := range order {
		order[i] = i
	}
	srv1, _ := start(t, cfg)
	first := runBodies(t, srv1, order, 3, "/v1/chat/completions", body)
	slices.Reverse(order)
	srv2, _ := start(t, cfg)
	second := runBodies(t, srv2, order, 3, "/v1/chat/completions", body)
	if !slices.Equal(first, second) {
		t.Errorf("same seed, different faults:\n%v\n%v", first, second)
	}
	if count(first, "ok") == int64(len(first)) || count(first, "ok") == 0 {
		t.Errorf("outcomes %v", first)
	}
	// Retries of one body fault independently: some body fails, then succeeds.
	recovered := false
	for i := 0; i+2 < len(first); i += 3 {
		if first[i] != "ok" && first[i+1] == "ok" {
			recovered = true
		}
	}
	if !recovered {
		t.Errorf("no body recovered on a retry: %v", first)
	}
	cfg.Seed = 43
	srv3, _ := start(t, cfg)
	if third := runBodies(t, srv3, order, 3, "/v1/chat/completions", body); slices.Equal(first, third) {
		t.Error("another seed gave the same faults")
	}
}

func TestFaultShapes(t *testing.T) {
	t.Run("openai mid-stream", func(t *testing.T) {
		srv, m := start(t, mock.Config{MidStreamRate: 1})
		r := post(t, srv, "/v1/chat/completions", oaBody("fail me", `,"stream":true,"stream_options":{"include_usage":true}`))
		wantStatus(t, r, 200)
		evs := parseSSE(t, r.body)
		if len(evs) < 3 || !strings.Contains(evs[1].data, `"delta":{"content":`) {
			t.Fatalf("no content before the error: %s", r.body)
		}
		if want := `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`; evs[len(evs)-1].data != want {
			t.Errorf("last event %s", evs[len(evs)-1].data)
		}
		if strings.Contains(string(r.body), "[DONE]") || strings.Contains(string(r.body), "finish_reason\":\"stop") {
			t.Errorf("stream finished after its error: %s", r.body)
		}
		if s := m.Stats(); s.MidStream != 1 || s.Completed != 0 || s.OutputTokens == 0 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("anthropic mid-stream", func(t *testing.T) {
		srv, _ := start(t, mock.Config{MidStreamRate: 1})
		r := post(t, srv, "/v1/messages", anBody("fail me", `,"stream":true`))
		wantStatus(t, r, 200)
		evs := parseSSE(t, r.body)
		last := evs[len(evs)-1]
		want := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"` + r.header.Get("request-id") + `"}`
		if last.name != "error" || last.data != want || evs[len(evs)-2].name != "content_block_delta" {
			t.Errorf("stream %s", r.body)
		}
	})
	t.Run("mid-stream plain", func(t *testing.T) {
		srv, m := start(t, mock.Config{MidStreamRate: 1})
		r := post(t, srv, "/v1/messages", anBody("fail me", ""))
		wantStatus(t, r, 500)
		if want := `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"` + r.header.Get("request-id") + `"}`; string(r.body) != want {
			t.Errorf("body %s", r.body)
		}
		if s := m.Stats(); s.MidStream != 1 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("overload", func(t *testing.T) {
		srv, _ := start(t, mock.Config{OverloadRate: 1})
		r := post(t, srv, "/v1/messages", anBody("x", `,"stream":true`))
		wantStatus(t, r, 529)
		if want := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"` + r.header.Get("request-id") + `"}`; string(r.body) != want {
			t.Errorf("body %s", r.body)
		}
		r = post(t, srv, "/v1/chat/completions", oaBody("x", ""))
		wantStatus(t, r, 503)
		if want := `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`; string(r.body) != want {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("server error", func(t *testing.T) {
		srv, _ := start(t, mock.Config{ServerErrorRate: 1})
		r := post(t, srv, "/v1/chat/completions", oaBody("x", ""))
		wantStatus(t, r, 500)
		if !strings.Contains(string(r.body), `"type":"server_error"`) {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("reset", func(t *testing.T) {
		srv, m := start(t, mock.Config{ResetRate: 1})
		if r := post(t, srv, "/v1/chat/completions", oaBody("x", "")); r.err == nil {
			t.Errorf("plain request answered %d %s", r.status, r.body)
		}
		r := post(t, srv, "/v1/chat/completions", oaBody("x", `,"stream":true`))
		if r.err == nil || strings.Contains(string(r.body), "[DONE]") {
			t.Errorf("stream not cut: %v %s", r.err, r.body)
		}
		if s := m.Stats(); s.Resets != 2 || s.Completed != 0 || s.InFlight != 0 {
			t.Errorf("stats %+v", s)
		}
	})
}

func TestOutageSpendCapAuth(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg            mock.Config
		path           string
		headers        []string
		status         int
		body           string // %s is the request id
		retryAfter     bool
		unauth, capped int64
	}{
		"openai outage": {cfg: mock.Config{Outage: true}, path: "/v1/chat/completions", status: 500,
			body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`},
		"anthropic outage": {cfg: mock.Config{Outage: true, APIKey: "k"}, path: "/v1/messages", status: 500,
			body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"%s"}`},
		"openai spend cap": {cfg: mock.Config{SpendCap: true, RPM: 600}, path: "/v1/chat/completions", status: 429, capped: 1,
			body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
		"anthropic spend cap": {cfg: mock.Config{SpendCap: true}, path: "/v1/messages", status: 429, capped: 1,
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits. You will regain access on the first day of next month at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"%s"}`},
		"openai wrong key": {cfg: mock.Config{APIKey: "sk-good1234567890abcd"}, path: "/v1/chat/completions", status: 401, unauth: 1,
			headers: []string{"Authorization", "Bearer sk-abc123def456ghijwxyz"},
			body:    `{"error":{"message":"Incorrect API key provided: sk-abc12***wxyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		"openai no key": {cfg: mock.Config{APIKey: "sk-good1234567890abcd"}, path: "/v1/chat/completions", status: 401, unauth: 1,
			body: `{"error":{"message":"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		"anthropic wrong key": {cfg: mock.Config{APIKey: "sk-ant-good1234567890abcd"}, path: "/v1/messages", status: 401, unauth: 1,
			headers: []string{"x-api-key", "sk-ant-wrong-0000000000wxyz"},
			body:    `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: sk-ant-w***wxyz"},"request_id":"%s"}`},
		"anthropic bearer ok": {cfg: mock.Config{APIKey: "sk-ant-good"}, path: "/v1/messages", status: 200,
			headers: []string{"Authorization", "Bearer sk-ant-good"}},
		"openai x-api-key ok": {cfg: mock.Config{APIKey: "sk-good"}, path: "/v1/chat/completions", status: 200,
			headers: []string{"X-Api-Key", "sk-good"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv, m := start(t, tc.cfg)
			body := anBody("hello", "")
			if strings.Contains(tc.path, "chat") {
				body = oaBody("hello", "")
			}
			r := post(t, srv, tc.path, body, tc.headers...)
			wantStatus(t, r, tc.status)
			id := r.header.Get("request-id") + r.header.Get("x-request-id")
			if want := strings.ReplaceAll(tc.body, "%s", id); tc.body != "" && string(r.body) != want {
				t.Errorf("body\n got %s\nwant %s", r.body, want)
			}
			if id == "" || r.header.Get("retry-after") != "" || r.header.Get("retry-after-ms") != "" {
				t.Errorf("headers %v", r.header)
			}
			if tc.cfg.RPM > 0 && r.header.Get("x-ratelimit-limit-requests") != "600" {
				t.Errorf("no rate-limit headers on an error: %v", r.header)
			}
			if s := m.Stats(); s.Unauthorized != tc.unauth || s.SpendCapped != tc.capped || s.Attempts != 1 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestDuplicates(t *testing.T) {
	srv, m := start(t, mock.Config{})
	wantStatus(t, post(t, srv, "/v1/messages", anBody("once", "")), 200)
	wantStatus(t, post(t, srv, "/v1/messages", anBody("twice", "")), 200)
	if s := m.Stats(); s.Completed != 2 || s.Duplicates != 0 {
		t.Errorf("stats %+v", s)
	}
	// Same body with other key order and whitespace, streamed this time.
	wantStatus(t, post(t, srv, "/v1/messages", `{ "stream": true, "messages":[{"role":"user","content":"once"}], "system":"Be terse.", "max_tokens":256, "model":"claude-mock"}`), 200)
	wantStatus(t, post(t, srv, "/v1/chat/completions", oaBody("once", "")), 200) // another format: another body
	if s := m.Stats(); s.Completed != 4 || s.Duplicates != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestClientDisconnectStopsStream(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		t.Run(path, func(t *testing.T) {
			srv, m := start(t, mock.Config{TokenDelay: 5 * time.Millisecond})
			body := oaBody("a long story please", `,"stream":true`)
			if path == "/v1/messages" {
				body = anBody("a long story please", `,"stream":true`)
			}
			resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || !strings.Contains(line, "data: ") && !strings.Contains(line, "event: ") {
				t.Fatalf("first line %q, %v", line, err)
			}
			resp.Body.Close()
			srv.Close() // waits for the handler
			full := mock.CountTokens(mock.Answer("a long story please", 256))
			if s := m.Stats(); s.Completed != 0 || s.Canceled != 1 || s.InFlight != 0 || s.OutputTokens >= int64(full) {
				t.Errorf("stats %+v (full answer %d tokens)", s, full)
			}
		})
	}
}

func TestTokenDelayPlain(t *testing.T) {
	srv, m := start(t, mock.Config{TokenDelay: time.Millisecond})
	start := time.Now()
	r := post(t, srv, "/v1/chat/completions", oaBody("slow", ""))
	wantStatus(t, r, 200)
	out := m.Stats().OutputTokens
	if el := time.Since(start); el < time.Duration(out)*time.Millisecond {
		t.Errorf("answered %d tokens in %v", out, el)
	}
}
