package providers

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"

	"github.com/tidwall/gjson"
)

// Answer is what a response body says, read without knowing which
// provider wrote it: the tables llmrun exports put every answer in the same
// columns.
type Answer struct {
	// Text is the answer's text: a chat completion's first choice, an
	// Anthropic message's text blocks, a Gemini candidate's text parts
	// (not its thoughts), a Responses API response's output text.
	Text string
	// FinishReason is why the answer ended, as the provider says it
	// (stop, length, end_turn, max_tokens, STOP, MAX_TOKENS, ...); a
	// Responses API response gives its status, or the reason it is
	// incomplete.
	FinishReason string
	// Embeddings are an embeddings response's vectors, in input order
	// (base64-encoded ones decoded).
	Embeddings [][]float64
}

// ReadAnswer reads a response body of any of the wire formats llmrun
// speaks, telling them apart by their shape.
func ReadAnswer(body []byte) Answer {
	root := gjson.ParseBytes(body)
	var a Answer
	switch {
	case root.Get("choices").IsArray(): // Chat Completions
		c := root.Get("choices.0")
		a.Text, a.FinishReason = c.Get("message.content").String(), c.Get("finish_reason").String()
	case root.Get("candidates").IsArray(): // Gemini
		c := root.Get("candidates.0")
		var b strings.Builder
		c.Get("content.parts").ForEach(func(_, part gjson.Result) bool {
			if t := part.Get("text"); t.Type == gjson.String && !part.Get("thought").Bool() {
				b.WriteString(t.Str)
			}
			return true
		})
		a.Text, a.FinishReason = b.String(), c.Get("finishReason").String()
	case root.Get("object").Str == "response": // Responses API
		var b strings.Builder
		root.Get("output").ForEach(func(_, item gjson.Result) bool {
			if item.Get("type").Str == "message" {
				item.Get("content").ForEach(func(_, part gjson.Result) bool {
					if part.Get("type").Str == "output_text" {
						b.WriteString(part.Get("text").Str)
					}
					return true
				})
			}
			return true
		})
		a.Text, a.FinishReason = b.String(), root.Get("status").Str
		if r := root.Get("incomplete_details.reason"); r.Str != "" {
			a.FinishReason = r.Str
		}
	case root.Get("type").Str == "message": // Anthropic Messages
		var b strings.Builder
		root.Get("content").ForEach(func(_, block gjson.Result) bool {
			if block.Get("type").Str == "text" {
				b.WriteString(block.Get("text").Str)
			}
			return true
		})
		a.Text, a.FinishReason = b.String(), root.Get("stop_reason").String()
	case root.Get("data").IsArray(): // embeddings
		root.Get("data").ForEach(func(_, d gjson.Result) bool {
			a.Embeddings = append(a.Embeddings, vector(d.Get("embedding")))
			return true
		})
	case root.Get("embedding.values").IsArray(): // Gemini embedContent
		a.Embeddings = [][]float64{vector(root.Get("embedding.values"))}
	case root.Get("embeddings").IsArray(): // Gemini batchEmbedContents
		root.Get("embeddings").ForEach(func(_, e gjson.Result) bool {
			a.Embeddings = append(a.Embeddings, vector(e.Get("values")))
			return true
		})
	}
	return a
}

// vector reads an embedding: an array of numbers, or base64 of
// little-endian float32s (encoding_format "base64").
func vector(v gjson.Result) []float64 {
	if v.Type == gjson.String {
		raw, err := base64.StdEncoding.DecodeString(v.Str)
		if err != nil {
			return nil
		}
		out := make([]float64, len(raw)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		}
		return out
	}
	out := []float64{}
	v.ForEach(func(_, x gjson.Result) bool {
		out = append(out, x.Num)
		return true
	})
	return out
}
