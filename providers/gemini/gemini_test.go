package gemini

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// The conformance suite (providers/conformance_gemini_test.go) covers the
// wire; these are the rules only Gemini has.

func TestPrepare(t *testing.T) {
	tests := map[string]struct {
		body, model, err string
		gone             []string
	}{
		"bare id":         {body: `{"model":"gemini-2.5-flash","contents":[]}`, model: "models/gemini-2.5-flash", gone: []string{"model"}},
		"resource name":   {body: `{"model":"models/gemini-2.5-pro","contents":[]}`, model: "models/gemini-2.5-pro"},
		"tuned model":     {body: `{"model":"tunedModels/my-model-7","contents":[]}`, model: "tunedModels/my-model-7"},
		"stream flags":    {body: `{"model":"m","stream":true,"stream_options":{"include_usage":true},"contents":[]}`, model: "models/m", gone: []string{"stream", "stream_options"}},
		"no model":        {body: `{"contents":[]}`, err: "no model"},
		"model not a str": {body: `{"model":7}`, err: "no model"},
		"path in model":   {body: `{"model":"../../files/x"}`, err: "not a model name"},
		"query in model":  {body: `{"model":"m?key=x"}`, err: "not a model name"},
		"not JSON":        {body: `{"model":`, err: "not valid JSON"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := []byte(tc.body)
			out, model, err := prepare(in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || model != tc.model || string(in) != tc.body {
				t.Fatalf("model %q err %v (input now %s)", model, err, in)
			}
			for _, k := range append(tc.gone, "model") {
				if gjson.GetBytes(out, k).Exists() {
					t.Errorf("%s still in %s", k, out)
				}
			}
			if !gjson.GetBytes(out, "contents").Exists() {
				t.Errorf("contents lost: %s", out)
			}
		})
	}
}

func TestAPIRoot(t *testing.T) {
	for in, want := range map[string]string{
		"https://generativelanguage.googleapis.com":         "https://generativelanguage.googleapis.com/v1beta",
		"https://generativelanguage.googleapis.com/":        "https://generativelanguage.googleapis.com/v1beta",
		"https://generativelanguage.googleapis.com/v1beta/": "https://generativelanguage.googleapis.com/v1beta",
		"http://proxy:8080/gemini/v1":                       "http://proxy:8080/gemini/v1",
	} {
		if got := apiRoot(in); got != want {
			t.Errorf("apiRoot(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	perDay := `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[
		{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"250"}]},
		{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"21s"}]}}`
	perMinute := strings.ReplaceAll(perDay, "PerDay", "PerMinute")
	tests := map[string]struct {
		status int
		body   string
		class  providers.Class
		daily  bool
		retry  time.Duration // -1: none
	}{
		"per day":            {429, perDay, providers.ClassRateLimited, true, -1},
		"per minute":         {429, perMinute, providers.ClassRateLimited, false, 21 * time.Second},
		"no quota at all":    {429, strings.ReplaceAll(perMinute, `"250"`, `"0"`), providers.ClassQuota, false, 21 * time.Second},
		"bad key, no detail": {400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`, providers.ClassAuth, false, -1},
		"cancelled":          {499, `{"error":{"code":499,"message":"The operation was cancelled.","status":"CANCELLED"}}`, providers.ClassServer, false, -1},
		"huge delay bounded": {429, `{"error":{"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"99999999s"}]}}`, providers.ClassRateLimited, false, providers.MaxRetryAfter},
		"bad delay ignored":  {429, `{"error":{"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"soon"}]}}`, providers.ClassRateLimited, false, -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := &providers.Error{Class: providers.ClassifyStatus(tc.status), Status: tc.status, Body: []byte(tc.body)}
			classifyBody(e)
			if e.Class != tc.class || e.Daily != tc.daily || e.HasRetryAfter != (tc.retry >= 0) || (tc.retry >= 0 && e.RetryAfter != tc.retry) {
				t.Fatalf("%+v", e)
			}
		})
	}
}

// serveOnce answers every request with body (SSE when it starts with
// "data:") and records the URLs asked for.
func serveOnce(t *testing.T, body string, urls *[]string) *Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		*urls = append(*urls, r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(body, "data:") {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return New(providers.Config{BaseURL: srv.URL + "/v1beta", APIKey: "k", Stream: strings.HasPrefix(body, "data:")})
}

// TestBlockedPrompt: a 200 whose prompt was blocked (no candidates) is an
// invalid request naming the reason, plain and streamed.
func TestBlockedPrompt(t *testing.T) {
	const blocked = `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.5-flash"}`
	for _, body := range []string{blocked, "data: " + blocked + "\r\n\r\n"} {
		var urls []string
		p := serveOnce(t, body, &urls)
		resp, err := p.Send(t.Context(), &providers.Request{Body: []byte(`{"model":"gemini-2.5-flash","contents":[{"parts":[{"text":"x"}]}]}`)})
		var pe *providers.Error
		if resp != nil || !errors.As(err, &pe) || pe.Class != providers.ClassInvalid || pe.Code != "SAFETY" || pe.Status != 200 || !strings.Contains(pe.Message, "blocked") || len(pe.Body) == 0 {
			t.Fatalf("%q: %v %+v", body[:5], resp, err)
		}
	}
}

// TestURLAndModel: the model goes in the path, streaming adds alt=sse,
// and an answer without modelVersion reports the model it was sent to.
func TestURLAndModel(t *testing.T) {
	for _, tc := range []struct{ body, url string }{
		{`{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP","index":0}]}`, "/v1beta/models/gemini-2.0-flash:generateContent"},
		{"data: " + `{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP","index":0}]}` + "\r\n\r\n", "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"},
	} {
		var urls []string
		p := serveOnce(t, tc.body, &urls)
		resp, err := p.Send(t.Context(), &providers.Request{Body: []byte(`{"model":"gemini-2.0-flash","contents":[{"parts":[{"text":"x"}]}]}`)})
		if err != nil || resp.Model != "gemini-2.0-flash" || resp.Text != "hi" || len(urls) != 1 || urls[0] != tc.url {
			t.Fatalf("%v %+v %v", err, resp, urls)
		}
	}
}
