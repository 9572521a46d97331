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
	"github.com/llmrun/llmrun/providers/gemini"
	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/providers/openai"
)

// embeddingClients are the providers with an embeddings endpoint, at the
// mock's root: where they post and with what credential. model is the
// model the answer is for (an Azure deployment URL names it); body is a
// request for inputs in the client's format (dims 0: the default), and
// usage the usage the mock's answer reports for "alpha", "beta".
var embeddingClients = map[string]struct {
	new               func(providers.Config) providers.Provider
	base, path, model string
	body              func(inputs []string, dims int) string
	usage             providers.Usage
}{
	"openai": {func(c providers.Config) providers.Provider { return openai.New(c) }, "/v1", "/v1/embeddings", "text-embedding-3-small",
		openAIEmbedBody, providers.Usage{InputTokens: 3}},
	"azure": {func(c providers.Config) providers.Provider { return azure.New(c) },
		"/openai/deployments/emb1?api-version=2024-10-21", "/openai/deployments/emb1/embeddings", "emb1", openAIEmbedBody, providers.Usage{InputTokens: 3}},
	// Gemini sends no usage: the runner estimates it.
	"gemini": {func(c providers.Config) providers.Provider { return gemini.New(c) }, "", "/v1beta/models/text-embedding-3-small:batchEmbedContents", "text-embedding-3-small",
		geminiEmbedBody, providers.Usage{}},
}

// openAIEmbedBody is an OpenAI embeddings request, with stream flags the
// provider must take off.
func openAIEmbedBody(inputs []string, dims int) string {
	in, _ := json.Marshal(inputs)
	d := ""
	if dims > 0 {
		d = fmt.Sprintf(`,"dimensions":%d`, dims)
	}
	return `{"model":"text-embedding-3-small","input":` + string(in) + d + `,"stream":true}`
}

// geminiEmbedBody is a Gemini batchEmbedContents request in llmrun's form
// (the model in the body, none in the requests).
func geminiEmbedBody(inputs []string, dims int) string {
	var reqs []string
	for _, in := range inputs {
		r, _ := json.Marshal(map[string]any{"content": map[string]any{"parts": []any{map[string]string{"text": in}}}})
		if dims > 0 {
			r = fmt.Appendf(r[:len(r)-1], `,"outputDimensionality":%d}`, dims)
		}
		reqs = append(reqs, string(r))
	}
	return `{"model":"text-embedding-3-small","requests":[` + strings.Join(reqs, ",") + `],"stream":true}`
}

// embedVectors are the vectors of an answer of either format, with their
// indexes (Gemini's are their positions).
func embedVectors(body []byte) (vecs [][]float32, idx []int64) {
	if e := gjson.GetBytes(body, "embeddings"); e.Exists() {
		for i, v := range e.Array() {
			var vec []float32
			json.Unmarshal([]byte(v.Get("values").Raw), &vec)
			vecs, idx = append(vecs, vec), append(idx, int64(i))
		}
		return vecs, idx
	}
	for _, d := range gjson.GetBytes(body, "data").Array() {
		var vec []float32
		json.Unmarshal([]byte(d.Get("embedding").Raw), &vec)
		vecs, idx = append(vecs, vec), append(idx, d.Get("index").Int())
	}
	return vecs, idx
}

// TestEmbeddingsSend: an embeddings request is sent plain whatever the
// stream setting, its answer kept as the provider wrote it (the mock's
// vectors), usage input tokens only (none from Gemini), no text; an answer
// as large as its inputs explain passes the response bound, which a chat
// answer's bound would not; errors classify as for chat.
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
				body := ec.body([]string{"alpha", "beta"}, 0)
				resp, err := p.Send(t.Context(), &providers.Request{ID: "e", Body: []byte(body), Endpoint: providers.EndpointEmbeddings})
				if err != nil {
					t.Fatal(err)
				}
				vecs, idx := embedVectors(resp.Body)
				for i, in := range []string{"alpha", "beta"} {
					want := mock.Embedding(ec.model, in, mock.DefaultEmbeddingDims)
					if len(vecs) != 2 || idx[i] != int64(i) || fmt.Sprint(vecs[i]) != fmt.Sprint(want) {
						t.Fatalf("stream=%v: %s", stream, resp.Body)
					}
				}
				if resp.Text != "" || resp.Usage != ec.usage || resp.Model != ec.model {
					t.Errorf("text %q usage %+v model %s", resp.Text, resp.Usage, resp.Model)
				}
			}
			if paths[0] != ec.path {
				t.Errorf("posted to %s, want %s", paths[0], ec.path)
			}

			// 100 inputs (Gemini's most) of 3,072 dimensions: about 4 MB of floats.
			inputs := make([]string, 100)
			for i := range inputs {
				inputs[i] = fmt.Sprintf("document %d", i)
			}
			// A 1 MiB slack keeps a chat answer's bound below it.
			// The mock computes 307,200 floats before its first byte: a
			// loaded machine's -race run took over 5s.
			p := ec.new(providers.Config{BaseURL: srv.URL + ec.base, APIKey: key, FirstByteTimeout: time.Minute, MaxResponseBytes: 1 << 20})
			resp, err := p.Send(t.Context(), &providers.Request{Body: []byte(ec.body(inputs, 3072)), Endpoint: providers.EndpointEmbeddings})
			if err != nil {
				t.Fatalf("a large answer: %v", err)
			}
			if vecs, _ := embedVectors(resp.Body); len(vecs) != 100 || len(vecs[99]) != 3072 {
				t.Fatalf("a large answer: %v (%d bytes)", err, len(resp.Body))
			}
			if chat := (&providers.Config{MaxResponseBytes: 1 << 20}).ResponseLimit(0, false); int64(len(resp.Body)) <= chat {
				t.Errorf("%d bytes fit a chat answer's bound (%d): the test proves nothing", len(resp.Body), chat)
			}

			bad, err := p.Send(t.Context(), &providers.Request{Body: []byte(ec.body([]string{""}, 0)), Endpoint: providers.EndpointEmbeddings})
			if pe := wantClass(t, err, providers.ClassInvalid); bad != nil || pe.Status != 400 || pe.Type != map[bool]string{true: "INVALID_ARGUMENT", false: "invalid_request_error"}[name == "gemini"] {
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
