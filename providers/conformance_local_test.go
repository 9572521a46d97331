package providers_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// TestConformanceNoKey: a provider configured without a key (a local
// server, --no-auth) sends no credential header at all, not an empty
// one, plain and streamed, and reads the answer as usual.
func TestConformanceNoKey(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
			io.Copy(io.Discard, req.Body)
			for _, h := range []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"} {
				if _, sent := req.Header[h]; sent {
					t.Errorf("%s sent without a key: %q", h, req.Header.Get(h))
				}
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, r.plain)
		})
		modes(t, func(t *testing.T, stream bool) {
			p := r.provider(srv.URL, stream, func(c *providers.Config) { c.APIKey = "" })
			resp, err := p.Send(t.Context(), r.request("x", 8))
			if err != nil || resp.Text != r.want.Text {
				t.Fatalf("%v %+v", err, resp)
			}
		})
	})
}
