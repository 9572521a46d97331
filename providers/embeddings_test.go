package providers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/azure"
	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/providers/openai"
)

// embeddingClients are the providers with an embeddings endpoint, at the
// mock's root: where they post and with what credential.
// model is the model the answer is for (an Azure deployment URL names it).
var embeddingClients = map[string]struct {
	new               func(providers.Config) providers.Provider
	base, path, model string
}{
	"openai": {func(c providers.Config) providers.Provider { return openai.New(c) }, "/v1", "/v1/embeddings", "text-embedding-3-small"},
	"azure": {func(c providers.Config) providers.Provider { return azure.New(c) },
		"/openai/deployments/emb1?api-version=2024-10-21", "/openai/deployments/emb1/embeddings", "emb1"},
}

// TestEmbeddingsSend: an embeddings request is sent plain whatever the
// stream setting, its answer kept as the provider wrote it (the mock's
// vectors), usage input tokens only, no text; an answer as large as its
// inputs explain passes the response bound, which a chat answer's bound
// would not; errors classify as for chat.
func TestEmbeddingsSend(t *testing.T) {
	for name, ec := range embeddingClients {
		t.Run(name, func(t *testing.T) {
			m := mock.New(mock.Config{})
			var paths []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				paths = append(paths, r.URL.Path)
				m.ServeHTTP(w, r)
			}))
			defer srv.Close()
			for _, stream := range []bool{true, false} {
				p := ec.new(providers.Config{BaseURL: srv.URL + ec.base, APIKey: key, Stream: stream, FirstByteTimeout: 5 * time.Second})
				body := `{"model":"text-embedding-3-small","input":["alpha","beta"],"stream":true}`
				resp, err := p.Send(t.Context(), &providers.Request{ID: "e", Body: []byte(body), Endpoint: providers.EndpointEmbeddings})
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Data []struct {
						Index     int       `json:"index"`
						Embedding []float32 `json:"embedding"`
					} `json:"data"`
				}
				json.Unmarshal(resp.Body, &got)
				for i, in := range []string{"alpha", "beta"} {
					want := mock.Embedding(ec.model, in, mock.DefaultEmbeddingDims)
					if len(got.Data) != 2 || got.Data[i].Index != i || fmt.Sprint(got.Data[i].Embedding) != fmt.Sprint(want) {
						t.Fatalf("stream=%v: %s", stream, resp.Body)
					}
				}
				if resp.Text != "" || resp.Usage != (providers.Usage{InputTokens: 3}) || resp.Model != ec.model {
					t.Errorf("text %q usage %+v model %s", resp.Text, resp.Usage, resp.Model)
				}
			}
			if paths[0] != ec.path {
				t.Errorf("posted to %s, want %s", paths[0], ec.path)
			}

			// 300 inputs of 3,072 dimensions: about 12 MB of floats.
			inputs := make([]string, 300)
			for i := range inputs {
				inputs[i] = fmt.Sprintf("document %d", i)
			}
			in, _ := json.Marshal(inputs)
			big := `{"model":"text-embedding-3-large","dimensions":3072,"input":` + string(in) + `}`
			p := ec.new(providers.Config{BaseURL: srv.URL + ec.base, APIKey: key, FirstByteTimeout: 5 * time.Second})
			resp, err := p.Send(t.Context(), &providers.Request{Body: []byte(big), Endpoint: providers.EndpointEmbeddings})
			if err != nil || len(resp.Body) < 8<<20 || gjson.GetBytes(resp.Body, "data.#").Int() != 300 {
				t.Fatalf("a large answer: %v (%d bytes)", err, len(resp.Body))
			}
			if chat := (&providers.Config{}).ResponseLimit(0, false); int64(len(resp.Body)) <= chat {
				t.Errorf("%d bytes fit a chat answer's bound (%d): the test proves nothing", len(resp.Body), chat)
			}

			bad, err := p.Send(t.Context(), &providers.Request{Body: []byte(`{"model":"e","input":""}`), Endpoint: providers.EndpointEmbeddings})
			if pe := wantClass(t, err, providers.ClassInvalid); bad != nil || pe.Status != 400 || pe.Type != "invalid_request_error" {
				t.Errorf("%+v", pe)
			}
		})
	}
}

// TestEmbeddingsNotJSON: a server answering embeddings with another
// content type while streaming is configured is still read as one body.
func TestEmbeddingsNotJSON(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"e","usage":{"prompt_tokens":3,"total_tokens":3}}`)
	})
	p := openai.New(providers.Config{BaseURL: srv.URL + "/v1", Stream: true})
	resp, err := p.Send(t.Context(), &providers.Request{Body: []byte(`{"model":"e","input":"x"}`), Endpoint: providers.EndpointEmbeddings})
	if err != nil || resp.Usage.InputTokens != 3 || !strings.Contains(string(resp.Body), `[0.5]`) {
		t.Fatalf("%v %+v", err, resp)
	}
}
