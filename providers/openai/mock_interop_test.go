package openai_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/providers/openai"
)

// These tests run the provider against providers/mock, the team's fake
// API, so the two cannot drift apart in wire format or fault classes.

const mockKey = "sk-interop-0123456789abcdef"

func mockProvider(t *testing.T, cfg mock.Config, stream bool, key string) *openai.Provider {
	t.Helper()
	srv := httptest.NewServer(mock.New(cfg))
	t.Cleanup(srv.Close)
	return openai.New(providers.Config{BaseURL: srv.URL + "/v1", APIKey: key, Stream: stream, HTTPClient: srv.Client(),
		FirstByteTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
}

func mockSend(t *testing.T, p *openai.Provider) (*providers.Response, error) {
	return p.Send(t.Context(), &providers.Request{ID: "x", Body: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Name a prime number."}],"max_completion_tokens":64}`)})
}

// withoutIDs decodes a body and drops what differs between two answers.
func withoutIDs(t *testing.T, b []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for _, k := range []string{"id", "created", "system_fingerprint"} {
		delete(m, k)
	}
	return m
}

func TestMockPlainAndStreamAgree(t *testing.T) {
	plain, err := mockSend(t, mockProvider(t, mock.Config{}, false, mockKey))
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := mockSend(t, mockProvider(t, mock.Config{}, true, mockKey))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := withoutIDs(t, plain.Body), withoutIDs(t, streamed.Body); !reflect.DeepEqual(a, b) {
		t.Fatalf("plain %s\nstream %s", plain.Body, streamed.Body)
	}
	if plain.Text == "" || plain.Text != streamed.Text || plain.Usage != streamed.Usage || plain.Usage.OutputTokens == 0 {
		t.Fatalf("plain %+v\nstream %+v", plain, streamed)
	}
	if plain.RequestID == "" || streamed.RequestID == "" {
		t.Error("request ids not read")
	}
}

func TestMockFaultClasses(t *testing.T) {
	tests := map[string]struct {
		cfg    mock.Config
		stream bool
		key    string
		want   providers.Class
	}{
		"mid-stream error":   {mock.Config{MidStreamRate: 1}, true, mockKey, providers.ClassMidStream},
		"reset mid-stream":   {mock.Config{ResetRate: 1}, true, mockKey, providers.ClassMidStream},
		"reset before reply": {mock.Config{ResetRate: 1}, false, mockKey, providers.ClassNetwork},
		"overloaded":         {mock.Config{OverloadRate: 1}, true, mockKey, providers.ClassOverloaded},
		"outage":             {mock.Config{Outage: true}, false, mockKey, providers.ClassServer},
		"spend cap":          {mock.Config{SpendCap: true}, true, mockKey, providers.ClassQuota},
		"wrong key":          {mock.Config{APIKey: "sk-other-key-0000000000"}, false, mockKey, providers.ClassAuth},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := mockSend(t, mockProvider(t, tc.cfg, tc.stream, tc.key))
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Class != tc.want {
				t.Fatalf("err = %v, want class %v", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.key[:8]) || strings.Contains(string(pe.Body), tc.key[:8]) {
				t.Fatalf("key leaked: %v %s", err, pe.Body)
			}
		})
	}
}
