package providers

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Endpoint is the kind of API call a request is: what its body means, how
// its answer reads and what it costs against the limits. An input line
// picks it with its url ("/v1/responses"); the zero value is chat.
type Endpoint uint8

const (
	// EndpointChat is a conversation turn: OpenAI Chat Completions,
	// Anthropic Messages.
	EndpointChat Endpoint = iota
	// EndpointResponses is OpenAI's Responses API.
	EndpointResponses
	// EndpointEmbeddings turns input texts into vectors: input tokens only,
	// no output.
	EndpointEmbeddings
)

var endpointNames = [...]string{"chat", "responses", "embeddings"}

func (e Endpoint) String() string {
	if int(e) < len(endpointNames) {
		return endpointNames[e]
	}
	return "unknown"
}

// Path is the endpoint's OpenAI path under /v1, as batch input lines name
// it in their url.
func (e Endpoint) Path() string {
	switch e {
	case EndpointResponses:
		return "/v1/responses"
	case EndpointEmbeddings:
		return "/v1/embeddings"
	}
	return "/v1/chat/completions"
}

// EndpointOf is the endpoint an OpenAI batch line's url names, with or
// without the /v1 prefix (Azure's older batch pages drop it).
func EndpointOf(url string) (Endpoint, bool) {
	switch strings.TrimPrefix(url, "/v1") {
	case "/chat/completions":
		return EndpointChat, true
	case "/responses":
		return EndpointResponses, true
	case "/embeddings":
		return EndpointEmbeddings, true
	}
	return 0, false
}

// ResponsesText gathers the text of a Responses body a tokenizer should
// count: the instructions and the input, a string or items whose content
// is a string or text parts.
func ResponsesText(body []byte) []byte {
	b := appendText(nil, gjson.GetBytes(body, "instructions"))
	in := gjson.GetBytes(body, "input")
	if in.Type == gjson.String {
		return appendText(b, in)
	}
	in.ForEach(func(_, item gjson.Result) bool {
		b = appendText(b, item.Get("content"))
		if o := item.Get("output"); o.Type == gjson.String { // tool results
			b = appendText(b, o)
		}
		return true
	})
	return b
}

// tokenIDText stands for one token id of an embeddings input given as ids:
// one token under every tokenizer llmrun estimates with.
const tokenIDText = " tok"

// EmbeddingsText gathers the inputs of an embeddings body for a tokenizer:
// a string, strings, or token ids (each counted as one token); a Gemini
// body's text parts.
func EmbeddingsText(body []byte) []byte {
	if !gjson.GetBytes(body, "input").Exists() {
		return ContentsText(body)
	}
	var b []byte
	var add func(v gjson.Result)
	add = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			b = append(b, v.Str...)
			b = append(b, '\n')
		case v.Type == gjson.Number:
			b = append(b, tokenIDText...)
		case v.IsArray():
			v.ForEach(func(_, x gjson.Result) bool { add(x); return true })
		}
	}
	add(gjson.GetBytes(body, "input"))
	return b
}

// EmbeddingInputs is how many inputs an embeddings body holds: the length
// of its input array (an array of token ids is one input) or of a Gemini
// body's requests, else 1.
func EmbeddingInputs(body []byte) int {
	in := gjson.GetBytes(body, "input")
	if reqs := gjson.GetBytes(body, "requests"); !in.Exists() && reqs.IsArray() {
		return max(len(reqs.Array()), 1)
	}
	if !in.IsArray() {
		return 1
	}
	n, ids := 0, false
	in.ForEach(func(_, x gjson.Result) bool {
		n++
		ids = ids || x.Type == gjson.Number
		return true
	})
	if ids {
		return 1
	}
	return max(n, 1)
}

// BatchUnits is what item counts against a batch's item limit: an
// embeddings request counts each of its inputs (OpenAI allows 50,000
// inputs per batch, as many as lines), any other request one.
func BatchUnits(item BatchItem) int {
	if item.Endpoint == EndpointEmbeddings {
		return EmbeddingInputs(item.Body)
	}
	return 1
}

// embeddingTokens is what one input's vector may take in an answer, counted
// in the plain-answer tokens Config.ResponseLimit allows 64 bytes each:
// 128 KiB, a 3,072-dimension vector printed as floats in full.
const embeddingTokens = 2048

// EmbeddingsBound is a Wire's BoundTokens for embeddings: an answer sized
// by its inputs, not by max tokens it has none of.
func EmbeddingsBound(req *Request) int { return EmbeddingInputs(req.Body) * embeddingTokens }
