package mock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestAccelerationLimit: a 5s window admits max(20, 2× the previous
// window's admissions); the rest are refused with OpenAI's slow_down and
// Anthropic's rate_limit_error naming the acceleration limit, without a
// retry-after; an idle window resets the allowance to the floor.
func TestAccelerationLimit(t *testing.T) {
	for _, d := range []struct {
		name, path, body string
		refused          func(r result) bool
	}{
		{"openai", "/v1/chat/completions", oaBody("hi", ""), func(r result) bool {
			return gjson.GetBytes(r.body, "error.code").Str == "slow_down"
		}},
		{"anthropic", "/v1/messages", anBody("hi", ""), func(r result) bool {
			return gjson.GetBytes(r.body, "error.type").Str == "rate_limit_error" &&
				strings.Contains(gjson.GetBytes(r.body, "error.message").Str, "acceleration limit")
		}},
	} {
		t.Run(d.name, func(t *testing.T) {
			clk := newClock()
			srv, m := start(t, mock.Config{Acceleration: true, Now: clk.Now})
			send := func(n int) (ok, refused int) {
				for range n {
					r := post(t, srv, d.path, d.body)
					switch {
					case r.status == 200:
						ok++
					case r.status == 429 && d.refused(r) && r.header.Get("retry-after") == "":
						refused++
					default:
						t.Fatalf("%d %v %s", r.status, r.header, r.body)
					}
				}
				return ok, refused
			}
			for i, w := range []struct{ send, ok int }{{25, 20}, {50, 40}, {30, 30}, {100, 60}} {
				if ok, ref := send(w.send); ok != w.ok || ref != w.send-w.ok {
					t.Fatalf("window %d: %d admitted, %d refused; want %d and %d", i, ok, ref, w.ok, w.send-w.ok)
				}
				clk.Advance(5 * time.Second)
			}
			clk.Advance(10 * time.Second) // an idle window: back to the floor
			if ok, _ := send(30); ok != 20 {
				t.Errorf("after an idle window: %d admitted, want 20", ok)
			}
			if st := m.Stats(); st.Accelerated != 5+10+40+10 || st.RateLimited != st.Accelerated {
				t.Errorf("stats: %d accelerated, %d rate limited", st.Accelerated, st.RateLimited)
			}
		})
	}
}

// TestStreamFailure: streamed requests get a bare 500 {"status":"failure"},
// plain ones succeed.
func TestStreamFailure(t *testing.T) {
	srv, _ := start(t, mock.Config{StreamFailure: true})
	r := post(t, srv, "/v1/chat/completions", oaBody("hi", `,"stream":true`))
	if r.status != 500 || string(r.body) != `{"status":"failure"}` {
		t.Fatalf("streamed: %d %s", r.status, r.body)
	}
	if r := post(t, srv, "/v1/chat/completions", oaBody("hi", "")); r.status != 200 {
		t.Fatalf("plain: %d %s", r.status, r.body)
	}
}
