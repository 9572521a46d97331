package mock

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestServerTokens(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 1, strings.Repeat("a", 33): 10, "é": 1, "日本語": 3, "café": 2} {
		if got := ServerTokens(s); got != want {
			t.Errorf("ServerTokens(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestCountTokensEndpoints: both providers' counting endpoints answer with
// the ServerTokens rule (not the usage rule), need a key, and are counted.
func TestCountTokensEndpoints(t *testing.T) {
	s := New(Config{})
	text := strings.Repeat("a", 33) + "日本"
	want := countBase + 2*messageOverhead + ServerTokens("sys") + ServerTokens(text)
	post := func(path, body string, h map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		for k, v := range h {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	w := post("/v1/messages/count_tokens", `{"model":"claude-x","system":"sys","messages":[{"role":"user","content":[{"type":"text","text":"`+text+`"}]}]}`, map[string]string{"x-api-key": "k"})
	if got := w.Body.String(); w.Code != 200 || got != `{"input_tokens":`+itoa(want)+`}` {
		t.Errorf("anthropic: %d %s, want %d tokens", w.Code, got, want)
	}
	w = post("/v1beta/models/gemini-2.5-flash:countTokens", `{"generateContentRequest":{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"`+text+`"}]}]}}`, map[string]string{"x-goog-api-key": "k"})
	if got := w.Body.String(); w.Code != 200 || got != `{"totalTokens":`+itoa(want)+`}` {
		t.Errorf("gemini: %d %s, want %d tokens", w.Code, got, want)
	}
	if w := post("/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil); w.Code != 401 {
		t.Errorf("without a key: %d", w.Code)
	}
	if st := s.Stats(); st.CountTokens != 2 || st.Attempts != 0 {
		t.Errorf("stats: %d counts, %d attempts", st.CountTokens, st.Attempts)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
