package mock

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// embeddings is the OpenAI embeddings dialect (wire-formats §8), POST
// /v1/embeddings: input a string, strings, token ids or arrays of token
// ids (at most 2048 inputs, 300,000 tokens in all); encoding_format float
// or base64 (little-endian float32); dimensions. Each vector is
// Embedding(model, input, dimensions), so a test can tell the right vector
// from any other. Never streamed; usage has input tokens only.
// deployment is Azure's, the model of a body that names none.
type embeddings struct {
	openAI
	deployment string
}

// DefaultEmbeddingDims is the length of a vector when the request sets no
// dimensions: short, so outputs stay readable.
const DefaultEmbeddingDims = 16

// Embedding limits of the API.
const (
	maxEmbeddingInputs = 2048
	maxEmbeddingTokens = 300_000
	maxEmbeddingDims   = 3072
)

// embedRequest is what an embeddings answer is made of.
type embedRequest struct {
	inputs []string // token-id inputs as "ids:1,2,3"
	dims   int
	base64 bool
	// each is the dimensions of each input, where they may differ
	// (Gemini's requests each name their own); nil: dims for all.
	each []int
}

func (e embeddings) parse(body []byte) (*request, *apiError) {
	var in struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
		Stream         json.RawMessage `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errInvalid("", "We could not parse the JSON body of your request: "+err.Error())
	}
	if len(in.Stream) > 0 {
		return nil, errInvalid("stream", "Unrecognized request argument supplied: stream")
	}
	inputs, tokens, aerr := embeddingInputs(in.Input)
	if aerr != nil {
		return nil, aerr
	}
	er := &embedRequest{inputs: inputs, dims: DefaultEmbeddingDims}
	switch in.EncodingFormat {
	case "", "float":
	case "base64":
		er.base64 = true
	default:
		return nil, errInvalid("encoding_format", "Invalid value for 'encoding_format': expected 'float' or 'base64'.")
	}
	if in.Dimensions != nil {
		if *in.Dimensions < 1 || *in.Dimensions > maxEmbeddingDims {
			return nil, errInvalid("dimensions", "Invalid 'dimensions': expected a value between 1 and "+strconv.Itoa(maxEmbeddingDims)+".")
		}
		er.dims = *in.Dimensions
	}
	model := in.Model
	if model == "" {
		model = e.deployment
	}
	return &request{model: model, prompt: inputs[0], inTokens: tokens, embed: er}, nil
}

// embeddingInputs reads an input member: its inputs as text and their
// tokens, or why the API would refuse it.
func embeddingInputs(raw json.RawMessage) ([]string, int, *apiError) {
	invalid := errInvalid("input", "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.")
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, 0, invalid
		}
		return []string{one}, CountTokens(one), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []string{idsText(ids)}, len(ids), nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, 0, invalid
	}
	if len(items) > maxEmbeddingInputs {
		return nil, 0, errInvalid("input", "Invalid 'input': maximum input array size is "+strconv.Itoa(maxEmbeddingInputs)+".")
	}
	var out []string
	tokens := 0
	for _, it := range items {
		if json.Unmarshal(it, &one) == nil && one != "" {
			out, tokens = append(out, one), tokens+CountTokens(one)
			continue
		}
		if json.Unmarshal(it, &ids) == nil && len(ids) > 0 {
			out, tokens = append(out, idsText(ids)), tokens+len(ids)
			continue
		}
		return nil, 0, invalid
	}
	if tokens > maxEmbeddingTokens {
		return nil, 0, errInvalid("input", "Requested "+strconv.Itoa(tokens)+" tokens, max 300000 tokens per request")
	}
	return out, tokens, nil
}

func idsText(ids []int) string {
	var b strings.Builder
	b.WriteString("ids:")
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(id))
	}
	return b.String()
}

// Embedding is the mock's vector for input under model: dims float32
// values drawn from a generator seeded with a hash of both, scaled to unit
// length as OpenAI's are. A token-id input is "ids:" followed by its ids
// joined with commas ("ids:1,2,3").
func Embedding(model, input string, dims int) []float32 {
	h := fnv.New128a()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(input))
	sum := h.Sum(nil)
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:])))
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x := rng.NormFloat64()
		v[i], norm = float32(x), norm+x*x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

func (e embeddings) plainBody(c *completion) []byte {
	er := c.embed
	b := append(make([]byte, 0, 64+len(er.inputs)*er.dims*12), `{"object":"list","data":[`...)
	for i, in := range er.inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = appendInt(b, i)
		b = append(b, `,"embedding":`...)
		vec := Embedding(c.model, in, er.dims)
		if er.base64 {
			raw := make([]byte, 4*len(vec))
			for j, x := range vec {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(x))
			}
			b = appendString(b, base64.StdEncoding.EncodeToString(raw))
		} else {
			b = append(b, '[')
			for j, x := range vec {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = appendString(b, c.model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = appendInt(b, c.inTokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, c.inTokens)
	return append(b, "}}"...)
}

// batchInputs counts the embedding inputs of an OpenAI batch input file's
// body (an embeddings batch holds at most 50,000 in all).
func batchInputs(body []byte) int {
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &in) != nil {
		return 1
	}
	inputs, _, err := embeddingInputs(in.Input)
	if err != nil {
		return 1
	}
	return len(inputs)
}

// embeddingsBatchLimit is what an embeddings batch's items may not exceed:
// maxInputs embedding inputs in all (array elements count one each).
func embeddingsBatchLimit(items []bitem, endpoint string, maxInputs int) []lineError {
	if endpoint != "/v1/embeddings" && endpoint != "/embeddings" {
		return nil
	}
	n := 0
	for _, it := range items {
		n += batchInputs(it.body)
	}
	if n <= maxInputs {
		return nil
	}
	return []lineError{{code: "too_many_tasks", message: "The batch input file holds " + strconv.Itoa(n) + " embedding inputs, more than the " + strconv.Itoa(maxInputs) + " maximum."}}
}
