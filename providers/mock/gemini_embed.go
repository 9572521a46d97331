package mock

import (
	"encoding/json"
	"strconv"
)

// Gemini's embeddings (wire-formats §5.8): POST models/{model}:embedContent
// {"content":{"parts":[…]},"outputDimensionality":…} answers
// {"embedding":{"values":[…]}}; models/{model}:batchEmbedContents
// {"requests":[{"model":"models/{model}","content":…}, …]} (at most 100)
// answers {"embeddings":[{"values":[…]}, …]} in request order. A content's
// vector is Embedding(model, its text parts joined by "\n", dims), so one
// text embeds to the same vector here as on the OpenAI route. No usage is
// sent, as Gemini sends none.

// Gemini's embedding modes, gemini.embed.
const (
	gmEmbedOne  = 1 // embedContent
	gmEmbedMany = 2 // batchEmbedContents
)

// maxGeminiEmbedRequests is batchEmbedContents' cap.
const maxGeminiEmbedRequests = 100

// gmEmbedRequest is one EmbedContentRequest as the mock reads it.
type gmEmbedRequest struct {
	Model                string          `json:"model"`
	Content              *geminiContent  `json:"content"`
	TaskType             string          `json:"taskType"`
	Title                string          `json:"title"`
	OutputDimensionality *int            `json:"outputDimensionality"`
	Stream               json.RawMessage `json:"stream"`
}

// parseEmbed reads an embedContent or batchEmbedContents body.
func (g gemini) parseEmbed(body []byte) (*request, *apiError) {
	var in struct {
		gmEmbedRequest
		Requests []gmEmbedRequest `json:"requests"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errInvalid("", "Invalid JSON payload received. "+err.Error())
	}
	if in.Stream != nil {
		return nil, errInvalid("stream", `Invalid JSON payload received. Unknown name "stream": Cannot find field.`)
	}
	reqs, what := []gmEmbedRequest{in.gmEmbedRequest}, "EmbedContentRequest"
	if g.embed == gmEmbedMany {
		reqs, what = in.Requests, "BatchEmbedContentsRequest.requests"
		switch {
		case len(reqs) == 0:
			return nil, errInvalid("requests", "* BatchEmbedContentsRequest.requests: requests is not specified")
		case len(reqs) > maxGeminiEmbedRequests:
			return nil, errInvalid("requests", "* BatchEmbedContentsRequest.requests: at most "+strconv.Itoa(maxGeminiEmbedRequests)+" requests can be in one batch")
		}
	}
	er := &embedRequest{dims: DefaultEmbeddingDims}
	tokens := 0
	for i, r := range reqs {
		at := what
		if g.embed == gmEmbedMany {
			at += "[" + strconv.Itoa(i) + "]"
			if r.Model != "models/"+g.model {
				return nil, errInvalid("requests", "* "+at+".model: the model of each request must be the batch's, models/"+g.model)
			}
		}
		if r.Content == nil || len(r.Content.Parts) == 0 || r.Content.text() == "" {
			return nil, errInvalid("content", "* "+at+".content: content is not specified")
		}
		dims := DefaultEmbeddingDims
		if d := r.OutputDimensionality; d != nil {
			if *d < 1 || *d > maxEmbeddingDims {
				return nil, errInvalid("outputDimensionality", "* "+at+".output_dimensionality: must be between 1 and "+strconv.Itoa(maxEmbeddingDims))
			}
			dims = *d
		}
		text := r.Content.text()
		er.inputs = append(er.inputs, text)
		er.each = append(er.each, dims)
		tokens += CountTokens(text)
	}
	return &request{model: g.model, prompt: er.inputs[0], inTokens: tokens, embed: er}, nil
}

// embedBody is the answer to an embeddings request.
func (g gemini) embedBody(c *completion) []byte {
	er := c.embed
	b := make([]byte, 0, 32+len(er.inputs)*DefaultEmbeddingDims*12)
	if g.embed == gmEmbedOne {
		b = append(b, `{"embedding":`...)
		b = appendValues(b, Embedding(c.model, er.inputs[0], er.each[0]))
		return append(b, '}')
	}
	b = append(b, `{"embeddings":[`...)
	for i, in := range er.inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValues(b, Embedding(c.model, in, er.each[i]))
	}
	return append(b, "]}"...)
}

// appendValues writes one ContentEmbedding: {"values":[…]}.
func appendValues(b []byte, vec []float32) []byte {
	b = append(b, `{"values":[`...)
	for j, x := range vec {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, "]}"...)
}
