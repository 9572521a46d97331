package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCallJSON: the batch clients' one call. A 2xx JSON answer comes back
// as sent (with the body sent); a non-2xx one is the dialect's StatusError;
// an answer that is not JSON, or that Decode refuses, is a ClassServer
// error with the request id and the key redacted from its body; the read
// stops at MaxAnswer.
func TestCallJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("x-request-id", "req_1")
		switch r.URL.Path {
		case "/ok":
			fmt.Fprintf(w, `{"method":%q,"body":%q}`, r.Method, b)
		case "/garbage":
			io.WriteString(w, "<html>"+testKey+"</html>")
		case "/wrong":
			io.WriteString(w, `[1,2]`)
		case "/long":
			io.WriteString(w, `{"a":"`+strings.Repeat("x", 100)+`"}`)
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	cfg := Config{APIKey: testKey}
	statusErr := errors.New("dialect's status error")
	call := func(path string, decode func([]byte) error, max int64) ([]byte, error) {
		return cfg.CallJSON(t.Context(), Call{Method: "POST", URL: srv.URL + path, Body: []byte("hi"), MaxAnswer: max,
			RequestIDHeader: "x-request-id", StatusError: func(*http.Response) error { return statusErr }, Decode: decode})
	}

	if raw, err := call("/ok", nil, 1<<20); err != nil || string(raw) != `{"method":"POST","body":"hi"}` {
		t.Errorf("ok: %s, %v", raw, err)
	}
	if _, err := call("/teapot", nil, 1<<20); err != statusErr {
		t.Errorf("non-2xx: %v, want the dialect's status error", err)
	}
	var pe *Error
	if _, err := call("/garbage", nil, 1<<20); !errors.As(err, &pe) || pe.Class != ClassServer || pe.Message != "unparsable answer" ||
		pe.RequestID != "req_1" || pe.Status != 200 || strings.Contains(string(pe.Body), testKey) {
		t.Errorf("not JSON: %#v", err)
	}
	var obj map[string]any
	decode := func(raw []byte) error { return json.Unmarshal(raw, &obj) }
	if _, err := call("/wrong", decode, 1<<20); !errors.As(err, &pe) || !strings.HasPrefix(pe.Message, "unparsable answer: ") {
		t.Errorf("refused by Decode: %v", err)
	}
	if _, err := call("/long", nil, 10); !errors.As(err, &pe) || pe.Message != "unparsable answer" || len(pe.Body) != 10 {
		t.Errorf("past MaxAnswer: %v", err)
	}
}
