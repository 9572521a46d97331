package providers_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/openai"
)

// TestErrorObjectIn200: an OpenAI-style server (a gateway, a local server)
// may answer 200 with an error object in place of the answer. Chat,
// Responses and embeddings all read it as a failed attempt, retried like
// a broken stream, with its message, and never with the key in its
// message or body.
func TestErrorObjectIn200(t *testing.T) {
	answer := `{"error":{"message":"upstream refused key ` + key + `","type":"server_error","code":"upstream"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-request-id", "req_200")
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	p := openai.New(providers.Config{BaseURL: srv.URL + "/v1", APIKey: key, FirstByteTimeout: 5 * time.Second})
	for name, c := range map[string]struct {
		ep   providers.Endpoint
		body string
	}{
		"chat":       {providers.EndpointChat, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		"responses":  {providers.EndpointResponses, `{"model":"m","input":"hi"}`},
		"embeddings": {providers.EndpointEmbeddings, `{"model":"m","input":"hi"}`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := p.Send(t.Context(), &providers.Request{ID: "r", Body: []byte(c.body), Endpoint: c.ep})
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Class != providers.ClassMidStream || pe.Status != 200 || pe.RequestID != "req_200" ||
				!strings.Contains(pe.Message, "upstream refused key") {
				t.Fatalf("error %#v", err)
			}
			if strings.Contains(pe.Message, key) || strings.Contains(string(pe.Body), key) || strings.Contains(err.Error(), key) {
				t.Errorf("the key is in the error: %q / %s", pe.Message, pe.Body)
			}
		})
	}
}
