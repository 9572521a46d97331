package mock_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestGeminiBatchCreateRefusals: a malformed create call is a 400 saying
// what is wrong, counted as a bad request, and creates no batch. Malformed
// JSON is named as such (it once fell through to "display_name is
// required").
func TestGeminiBatchCreateRefusals(t *testing.T) {
	const path = "/v1beta/models/gemini-x:batchGenerateContent"
	item := `{"request":{"contents":[{"parts":[{"text":"hi"}]}]},"metadata":{"key":"k1"}}`
	cases := map[string]struct{ body, want string }{
		"not json":       {`{"batch":`, "Invalid JSON payload received."},
		"bad requests":   {`{"batch":{"displayName":"x","inputConfig":{"requests":{"requests":{}}}}}`, "Invalid JSON payload received."},
		"no name":        {`{"batch":{"inputConfig":{"requests":{"requests":[` + item + `]}}}}`, "display_name is required"},
		"empty":          {`{"batch":{"displayName":"x","inputConfig":{"requests":{"requests":[]}}}}`, "requests must not be empty"},
		"request string": {`{"batch":{"displayName":"x","inputConfig":{"requests":{"requests":[{"request":"hi"}]}}}}`, "requests[0].request: must be an object"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			srv, m := start(t, mock.Config{})
			r := post(t, srv, path, c.body)
			wantStatus(t, r, 400)
			if msg := gjson.GetBytes(r.body, "error.message").Str; !strings.Contains(msg, c.want) {
				t.Fatalf("message %q, want it to contain %q", msg, c.want)
			}
			if st := m.Stats(); st.BadRequests != 1 {
				t.Fatalf("bad requests %d, want 1", st.BadRequests)
			}
			if r := get(t, srv, "/v1beta/batches"); gjson.GetBytes(r.body, "operations.#").Int() != 0 {
				t.Fatalf("a refused create made a batch: %s", r.body)
			}
		})
	}
}

// TestGeminiBatchUnknownFile: a create call naming an input file never
// uploaded is a 404 and creates no batch.
func TestGeminiBatchUnknownFile(t *testing.T) {
	srv, m := start(t, mock.Config{})
	r := post(t, srv, "/v1beta/models/gemini-x:batchGenerateContent", `{"batch":{"displayName":"x","inputConfig":{"fileName":"files/f"}}}`)
	wantStatus(t, r, 404)
	if st := m.Stats(); st.BatchesCreated != 0 || st.NotFound != 1 {
		t.Fatalf("stats %+v", st)
	}
}
