package mock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestAzureGate: classic deployment routes need an api-version (404
// otherwise, as the mangled URL got) and the api-key header (a
// Bearer token is not a key there: 401); v1 routes take either credential.
func TestAzureGate(t *testing.T) {
	srv, m := start(t, mock.Config{APIKey: "az-key-0123456789"})
	body := oaBody("Name a prime number.", "")
	tests := map[string]struct {
		path    string
		headers []string
		status  int
		code    string
	}{
		"classic, api-key":            {"/openai/deployments/dep1/chat/completions?api-version=2024-10-21", []string{"api-key", "az-key-0123456789"}, 200, ""},
		"classic, no api-version":     {"/openai/deployments/dep1/chat/completions", []string{"api-key", "az-key-0123456789"}, 404, "404"},
		"classic, the issue's URL":    {"/openai/deployments/dep1?api-version=2024-10-21/chat/completions", []string{"api-key", "az-key-0123456789"}, 404, ""},
		"classic, Bearer":             {"/openai/deployments/dep1/chat/completions?api-version=2024-10-21", []string{"Authorization", "Bearer az-key-0123456789"}, 401, "401"},
		"classic, wrong key":          {"/openai/deployments/dep1/chat/completions?api-version=2024-10-21", []string{"api-key", "az-wrong-0123456789"}, 401, "401"},
		"v1, Bearer":                  {"/openai/v1/chat/completions", []string{"Authorization", "Bearer az-key-0123456789"}, 200, ""},
		"v1, api-key, no api-version": {"/openai/v1/chat/completions", []string{"api-key", "az-key-0123456789"}, 200, ""},
		"v1, no credential":           {"/openai/v1/chat/completions", nil, 401, "401"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			res := post(t, srv, tt.path, body, tt.headers...)
			if res.err != nil || res.status != tt.status || gjson.GetBytes(res.body, "error.code").String() != tt.code {
				t.Fatalf("%d %v: %s", res.status, res.err, res.body)
			}
			if strings.Contains(string(res.body), "az-wrong") {
				t.Errorf("the key echoed: %s", res.body)
			}
		})
	}
	if st := m.Stats(); st.Completed != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestAzureDialect: Azure's answers as the mock writes them: the
// deployment as the model of a body without one, filter results plain and
// streamed (the stream opening with its filter-only chunk), the content
// filter's 400, and a 429 with code "429" and the wait in its message.
func TestAzureDialect(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	const path = "/openai/deployments/dep1/chat/completions?api-version=2024-10-21"
	key := []string{"api-key", "k"}
	plain := post(t, srv, path, `{"messages":[{"role":"user","content":"Hi"}]}`, key...)
	if plain.status != 200 || gjson.GetBytes(plain.body, "model").Str != "dep1" ||
		!gjson.GetBytes(plain.body, "prompt_filter_results.0.content_filter_results.hate").Exists() ||
		!gjson.GetBytes(plain.body, "choices.0.content_filter_results.sexual").Exists() ||
		gjson.GetBytes(plain.body, "choices.0.message.content").Str != mock.Answer("Hi", 0) {
		t.Fatalf("plain: %s", plain.body)
	}
	stream := post(t, srv, path, `{"messages":[{"role":"user","content":"Hi"}],"stream":true}`, key...)
	first, _, _ := strings.Cut(string(stream.body), "\n\n")
	if stream.status != 200 || !strings.HasPrefix(first, `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":`) {
		t.Fatalf("stream opens with %s", first)
	}
	filtered := post(t, srv, path, oaBody("Tell me "+mock.ContentFilterTrigger, ""), key...)
	if filtered.status != 400 || gjson.GetBytes(filtered.body, "error.code").Str != "content_filter" ||
		gjson.GetBytes(filtered.body, "error.innererror.code").Str != "ResponsibleAIPolicyViolation" {
		t.Fatalf("filter: %d %s", filtered.status, filtered.body)
	}

	clk := newClock()
	srv, _ = start(t, mock.Config{RPM: 1, Burst: time.Minute, Now: clk.Now})
	post(t, srv, path, oaBody("one", ""), key...)
	limited := post(t, srv, path, oaBody("two", ""), key...)
	if limited.status != 429 || gjson.GetBytes(limited.body, "error.code").Str != "429" || gjson.GetBytes(limited.body, "error.type").Exists() ||
		limited.header.Get("retry-after") == "" ||
		!strings.Contains(gjson.GetBytes(limited.body, "error.message").Str, "Please retry after "+limited.header.Get("retry-after")+" seconds.") {
		t.Fatalf("429: %v %s", limited.header, limited.body)
	}
}
