package providers

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestExchangeMarksCheckedBody: a plain answer's Body is the bytes
// Exchange checked, and BodyValid says so, so that the output line does
// not scan them again; a ParsePlain that puts other bytes in Body (a
// translation) leaves it false.
func TestExchangeMarksCheckedBody(t *testing.T) {
	const answer = `{"choices":[{"message":{"content":"hi"}}]}`
	cfg := &Config{HTTPClient: &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(answer)), ContentLength: int64(len(answer)), Request: r}, nil
	})}}
	for name, tc := range map[string]struct {
		parse func([]byte, *Response) error
		want  bool
	}{
		"the body itself": {func(b []byte, out *Response) error { out.Body = b; return nil }, true},
		"a copy":          {func(b []byte, out *Response) error { out.Body = append([]byte(nil), b...); return nil }, false},
		"a translation":   {func(b []byte, out *Response) error { out.Body = []byte(`{"x":1}`); return nil }, false},
	} {
		t.Run(name, func(t *testing.T) {
			w := &Wire{URL: "http://127.0.0.1/x", Prepare: func(b []byte) ([]byte, error) { return b, nil }, ParsePlain: tc.parse}
			resp, err := cfg.Exchange(t.Context(), w, []byte(`{}`), 10)
			if err != nil {
				t.Fatal(err)
			}
			if resp.BodyValid != tc.want {
				t.Errorf("BodyValid %v, want %v", resp.BodyValid, tc.want)
			}
		})
	}
}
