package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/providers/sse"
)

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKeepaliveCommentsAreIdle is issue 22 item 9: a stream that sends one
// event and then only ": keepalive" comments, one every 2s, times out
// after the idle timeout (5s), not at the request timeout; a stream whose
// events keep coming within it is not cut.
func TestKeepaliveCommentsAreIdle(t *testing.T) {
	for _, tc := range []struct {
		name, every string
		wantErr     bool
	}{
		{"comments", ": keepalive\n\n", true},
		{"events", "event: ping\ndata: {}\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pr, pw := io.Pipe()
				done := make(chan struct{})
				defer close(done)
				go func() {
					io.WriteString(pw, "data: {\"a\":1}\n\n")
					for i := 0; i < 15; i++ {
						select {
						case <-done:
							return
						case <-time.After(2 * time.Second):
						}
						if _, err := io.WriteString(pw, tc.every); err != nil {
							return
						}
					}
					pw.Close()
				}()
				cfg := &Config{Stream: true, IdleTimeout: 5 * time.Second, HTTPClient: &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
					go func() { <-r.Context().Done(); pw.CloseWithError(r.Context().Err()) }()
					return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: r}, nil
				})}}
				events := 0
				w := &Wire{URL: "http://127.0.0.1/x", Prepare: func(b []byte) ([]byte, error) { return b, nil },
					ReadStream: func(ctx context.Context, r io.Reader, out *Response, _ time.Time) error {
						d := sse.NewDecoder(r)
						for d.Next() {
							events++
						}
						return d.Err()
					}}
				start := time.Now()
				_, err := cfg.Exchange(t.Context(), w, []byte(`{}`), 10)
				took := time.Since(start)
				var pe *Error
				switch {
				case tc.wantErr && (!errors.As(err, &pe) || pe.Class != ClassTimeout || !strings.Contains(pe.Message, "no stream data")):
					t.Fatalf("err %v, want a timeout naming no stream data", err)
				case tc.wantErr && took != 5*time.Second:
					t.Errorf("timed out after %v, want 5s (the event at 0s, comments at 2s and 4s)", took)
				case !tc.wantErr && err != nil:
					t.Fatalf("events every second: %v", err)
				case !tc.wantErr && events != 16:
					t.Errorf("%d events, want 16", events)
				}
			})
		})
	}
}
