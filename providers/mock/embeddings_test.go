package mock_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// vectors decodes an embeddings answer's vectors, floats or base64, by
// index.
func vectors(t *testing.T, body []byte) [][]float32 {
	t.Helper()
	var out [][]float32
	gjson.GetBytes(body, "data").ForEach(func(_, d gjson.Result) bool {
		if int(d.Get("index").Int()) != len(out) {
			t.Fatalf("data out of order: %s", body)
		}
		var v []float32
		if e := d.Get("embedding"); e.Type == gjson.String {
			raw, err := base64.StdEncoding.DecodeString(e.Str)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("base64 %v", err)
			}
			for i := 0; i < len(raw); i += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
			}
		} else if err := json.Unmarshal([]byte(e.Raw), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
		return true
	})
	return out
}

// TestEmbeddings: one vector per input, in input order, equal to
// Embedding for its model and input, floats and base64 alike; unit
// length; usage with input tokens only; the API's refusals.
func TestEmbeddings(t *testing.T) {
	srv, m := start(t, mock.Config{})
	for name, tc := range map[string]struct {
		body   string
		inputs []string
		dims   int
	}{
		"one string":      {`{"model":"text-embedding-3-small","input":"hello"}`, []string{"hello"}, mock.DefaultEmbeddingDims},
		"strings, base64": {`{"model":"text-embedding-3-small","input":["a","bb","ccc"],"encoding_format":"base64"}`, []string{"a", "bb", "ccc"}, mock.DefaultEmbeddingDims},
		"dimensions":      {`{"model":"e","input":["x"],"dimensions":256}`, []string{"x"}, 256},
		"token ids":       {`{"model":"e","input":[[1,2,3],[4]]}`, []string{"ids:1,2,3", "ids:4"}, mock.DefaultEmbeddingDims},
	} {
		t.Run(name, func(t *testing.T) {
			res := post(t, srv, "/v1/embeddings", tc.body)
			if res.status != 200 || gjson.GetBytes(res.body, "object").Str != "list" || gjson.GetBytes(res.body, "usage.prompt_tokens").Int() == 0 ||
				gjson.GetBytes(res.body, "usage.prompt_tokens").Int() != gjson.GetBytes(res.body, "usage.total_tokens").Int() ||
				gjson.GetBytes(res.body, "usage.completion_tokens").Exists() {
				t.Fatalf("%d %s", res.status, res.body)
			}
			got := vectors(t, res.body)
			model := gjson.Get(tc.body, "model").Str
			if len(got) != len(tc.inputs) {
				t.Fatalf("%d vectors", len(got))
			}
			for i, in := range tc.inputs {
				want := mock.Embedding(model, in, tc.dims)
				var norm float64
				for j := range want {
					if got[i][j] != want[j] {
						t.Fatalf("input %d: vector %v, want %v", i, got[i], want)
					}
					norm += float64(want[j]) * float64(want[j])
				}
				if len(got[i]) != tc.dims || math.Abs(norm-1) > 1e-5 {
					t.Fatalf("input %d: %d dims, norm %v", i, len(got[i]), norm)
				}
			}
		})
	}
	if a, b := mock.Embedding("m", "x", 8), mock.Embedding("m", "y", 8); a[0] == b[0] && a[1] == b[1] {
		t.Error("different inputs, same vector")
	}
	for body, want := range map[string]string{
		`{"model":"e","input":""}`:                                        "input",
		`{"model":"e","input":["a",""]}`:                                  "input",
		`{"model":"e","input":"a","stream":true}`:                         "stream",
		`{"model":"e","input":"a","dimensions":0}`:                        "dimensions",
		`{"model":"e","input":"a","encoding_format":1}`:                   "",
		`{"model":"e","input":["` + strings.Repeat(`a","`, 2048) + `a"]}`: "input",
	} {
		res := post(t, srv, "/v1/embeddings", body)
		if res.status != 400 || (want != "" && gjson.GetBytes(res.body, "error.param").Str != want) {
			t.Errorf("%.60s: %d %s", body, res.status, res.body)
		}
	}
	if st := m.Stats(); st.OutputTokens != 0 || st.InputTokens == 0 {
		t.Errorf("embeddings produce no output tokens: %+v", st)
	}
	az := post(t, srv, "/openai/deployments/emb1/embeddings?api-version=2024-10-21", `{"input":"hi"}`, "api-key", "k")
	if az.status != 200 || gjson.GetBytes(az.body, "model").Str != "emb1" || vectors(t, az.body)[0][0] != mock.Embedding("emb1", "hi", mock.DefaultEmbeddingDims)[0] {
		t.Errorf("azure: %d %s", az.status, az.body)
	}
}

// TestGeminiEmbeddings: embedContent answers one vector, batchEmbedContents
// one per request in order, each Embedding of its text parts (joined by
// newlines) at its own dimensionality, with no usage (Gemini sends none);
// the API's refusals are INVALID_ARGUMENT 400s.
func TestGeminiEmbeddings(t *testing.T) {
	srv, m := start(t, mock.Config{})
	one := post(t, srv, "/v1beta/models/text-embedding-004:embedContent", `{"content":{"parts":[{"text":"a"},{"text":"b"}]},"taskType":"RETRIEVAL_DOCUMENT"}`)
	var v []float32
	json.Unmarshal([]byte(gjson.GetBytes(one.body, "embedding.values").Raw), &v)
	if want := mock.Embedding("text-embedding-004", "a\nb", mock.DefaultEmbeddingDims); one.status != 200 || fmt.Sprint(v) != fmt.Sprint(want) || gjson.GetBytes(one.body, "usageMetadata").Exists() {
		t.Fatalf("%d %s", one.status, one.body)
	}
	many := post(t, srv, "/v1beta/models/e:batchEmbedContents", `{"requests":[{"model":"models/e","content":{"parts":[{"text":"x"}]}},{"model":"models/e","content":{"parts":[{"text":"y"}]},"outputDimensionality":5}]}`)
	es := gjson.GetBytes(many.body, "embeddings").Array()
	if many.status != 200 || len(es) != 2 {
		t.Fatalf("%d %s", many.status, many.body)
	}
	for i, w := range []struct {
		in   string
		dims int
	}{{"x", mock.DefaultEmbeddingDims}, {"y", 5}} {
		var got []float32
		json.Unmarshal([]byte(es[i].Get("values").Raw), &got)
		if fmt.Sprint(got) != fmt.Sprint(mock.Embedding("e", w.in, w.dims)) {
			t.Errorf("request %d: %v", i, got)
		}
	}
	reqs := strings.Repeat(`{"model":"models/e","content":{"parts":[{"text":"x"}]}},`, 101)
	for body, path := range map[string]string{
		`{"content":{"parts":[]}}`:                                      "embedContent",
		`{"content":{"parts":[{"text":"x"}]},"stream":true}`:            "embedContent",
		`{"content":{"parts":[{"text":"x"}]},"outputDimensionality":0}`: "embedContent",
		`{"requests":[]}`: "batchEmbedContents",
		`{"requests":[{"model":"models/other","content":{"parts":[{"text":"x"}]}}]}`: "batchEmbedContents",
		`{"requests":[` + reqs[:len(reqs)-1] + `]}`:                                  "batchEmbedContents",
	} {
		res := post(t, srv, "/v1beta/models/e:"+path, body)
		if res.status != 400 || gjson.GetBytes(res.body, "error.status").Str != "INVALID_ARGUMENT" {
			t.Errorf("%.60s: %d %s", body, res.status, res.body)
		}
	}
	if st := m.Stats(); st.Completed != 2 || st.OutputTokens != 0 || st.InputTokens == 0 {
		t.Errorf("stats %+v", st)
	}
}
