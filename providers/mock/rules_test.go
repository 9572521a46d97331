package mock_test

import (
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestModelRules: bodies a model's family refuses are answered as the
// real APIs answer them, unless NoModelRules; KnownModels adds the 404.
func TestModelRules(t *testing.T) {
	body := func(model, text, extra string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"` + text + `"}]` + extra + `}`
	}
	an := func(model, extra string) string {
		return `{"model":"` + model + `","max_tokens":5,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	tests := []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"reasoning max_tokens", "/v1/chat/completions", body("o3-mini", "hi", `,"max_tokens":5`), 400, "Use 'max_completion_tokens' instead"},
		{"reasoning max_completion_tokens", "/v1/chat/completions", body("o3-mini", "hi", `,"max_completion_tokens":5`), 200, ""},
		{"reasoning temperature", "/v1/chat/completions", body("gpt-5-mini", "hi", `,"temperature":0.2`), 400, "Only the default (1) value is supported"},
		{"reasoning default temperature", "/v1/chat/completions", body("gpt-5-mini", "hi", `,"temperature":1`), 200, ""},
		{"gpt-4o max_tokens", "/v1/chat/completions", body("gpt-4o-mini", "hi", `,"max_tokens":5`), 200, ""},
		{"json mode without json", "/v1/chat/completions", body("gpt-4o-mini", "hi", `,"response_format":{"type":"json_object"}`), 400, "must contain the word 'json'"},
		{"json mode with json", "/v1/chat/completions", body("gpt-4o-mini", "answer in JSON", `,"response_format":{"type":"json_object"}`), 200, ""},
		{"custom model json mode", "/v1/chat/completions", body("llama3", "hi", `,"response_format":{"type":"json_object"}`), 200, ""},
		{"claude 4.5 temperature and top_p", "/v1/messages", an("claude-sonnet-4-5", `,"temperature":0.5,"top_p":0.9`), 400, "cannot both be specified"},
		{"claude 4 temperature and top_p", "/v1/messages", an("claude-sonnet-4", `,"temperature":0.5,"top_p":0.9`), 200, ""},
		{"claude temperature 1.5", "/v1/messages", an("claude-3-5-haiku", `,"temperature":1.5`), 400, "less than or equal to 1"},
	}
	srv, m := start(t, mock.Config{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, srv, tc.path, tc.body, "x-api-key", "k", "authorization", "Bearer k")
			wantStatus(t, r, tc.status)
			if tc.msg != "" && !strings.Contains(string(r.body), tc.msg) {
				t.Errorf("body %s, want %q", r.body, tc.msg)
			}
		})
	}
	if st := m.Stats(); st.BadRequests != 5 {
		t.Errorf("BadRequests = %d, want 5", st.BadRequests)
	}

	off, _ := start(t, mock.Config{NoModelRules: true})
	wantStatus(t, post(t, off, "/v1/chat/completions", body("o3-mini", "hi", `,"max_tokens":5`)), 200)

	known, km := start(t, mock.Config{KnownModels: true})
	wantStatus(t, post(t, known, "/v1/chat/completions", body("claude-sonnet-4-5", "hi", "")), 404)
	wantStatus(t, post(t, known, "/v1/chat/completions", body("llama3", "hi", "")), 404)
	wantStatus(t, post(t, known, "/v1/chat/completions", body("mock-1", "hi", "")), 200)
	wantStatus(t, post(t, known, "/v1/chat/completions", body("gpt-4o-mini", "hi", "")), 200)
	wantStatus(t, post(t, known, "/v1beta/models/gpt-4o-mini:generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`), 404)
	wantStatus(t, post(t, known, "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`), 200)
	if st := km.Stats(); st.NotFound != 3 {
		t.Errorf("NotFound = %d, want 3", st.NotFound)
	}
}
