package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
)

// Embeddings requests between OpenAI's shape and Gemini's (wire-formats
// §5.8, §8). llmrun's Gemini embeddings body is the embedContent request
// ({"content": …}) for one input, or the batchEmbedContents request
// ({"requests": [{"content": …}, …]}) for many, plus "model" as in every
// format: the provider moves it into the URL and the requests.

// MaxGeminiEmbedInputs is how many inputs one batchEmbedContents call
// takes (the API answers more with a 400).
const MaxGeminiEmbedInputs = 100

// GeminiEmbedMany reports whether a Gemini embeddings body holds many
// inputs (a batchEmbedContents request), not one.
func GeminiEmbedMany(body []byte) bool { return gjson.GetBytes(body, "requests").Exists() }

// geminiEmbeddingsFromPivot is the fromPivot of Gemini's embeddings.
func geminiEmbeddingsFromPivot(pivot []byte, _ int) ([]byte, error) {
	return convert(FormatOpenAI, FormatGemini, pivot, (*translator).embeddingsToGemini)
}

// geminiEmbeddingsToPivot is the toPivot of Gemini's embeddings.
func geminiEmbeddingsToPivot(body []byte) ([]byte, error) {
	return convert(FormatGemini, FormatOpenAI, body, (*translator).embeddingsFromGemini)
}

// embeddingsToGemini turns an OpenAI embeddings request into Gemini's:
// a string input one content, an array of strings requests of one content
// each; dimensions outputDimensionality. Token-id inputs and base64
// vectors have no Gemini equivalent.
func (t *translator) embeddingsToGemini(root gjson.Result) {
	var keys []string
	root.ForEach(func(k, _ gjson.Result) bool {
		switch k.Str {
		case "model", "input", "dimensions", "user": // user is a tracking tag: nothing to embed
		case "encoding_format":
			if f := root.Get(k.Str).Str; f != "float" {
				t.fail("encoding_format %q: Gemini answers floats only", f)
			}
		default:
			keys = append(keys, k.Str)
		}
		return true
	})
	if len(keys) > 0 {
		sort.Strings(keys)
		t.fail("%s has no Gemini equivalent", strings.Join(keys, ", "))
	}
	t.copyField(root, "model", "model")
	dims := root.Get("dimensions")
	content := func(v gjson.Result, where string) string {
		if v.Type != gjson.String {
			t.fail("%s is not text (token-id inputs have no Gemini equivalent)", where)
			return ""
		}
		c := `{"content":{"parts":[{"text":` + v.Raw + `}]}`
		if dims.Exists() {
			c += `,"outputDimensionality":` + dims.Raw
		}
		return c + "}"
	}
	switch in := root.Get("input"); {
	case in.IsArray():
		reqs := make([]string, 0, 8)
		in.ForEach(func(i, v gjson.Result) bool {
			reqs = append(reqs, content(v, "input["+i.String()+"]"))
			return t.err == nil
		})
		t.setRaw("requests", "["+strings.Join(reqs, ",")+"]")
	default:
		if c := content(in, "input"); t.err == nil {
			r := gjson.Parse(c)
			t.setRaw("content", r.Get("content").Raw)
			t.copyField(r, "outputDimensionality", "outputDimensionality")
		}
	}
}

// embeddingsFromGemini turns a Gemini embeddings request into OpenAI's:
// one content a string input (its text parts joined by newlines), requests
// an array of them; outputDimensionality dimensions (one for all).
// taskType is dropped: it tunes Gemini's vector for a use, and OpenAI's
// models embed every text one way. A title is text Gemini embeds with the
// document, with no place in OpenAI's request.
func (t *translator) embeddingsFromGemini(root gjson.Result) {
	t.copyField(root, "model", "model")
	dims := ""
	one := func(r gjson.Result, where string) string {
		if r.Get("title").Exists() {
			t.fail("%s has a title, which OpenAI's embeddings have no place for", where)
		}
		if d := r.Get("outputDimensionality"); d.Exists() {
			if dims != "" && dims != d.Raw {
				t.fail("%s asks for %s dimensions, another request for %s: OpenAI takes one for all", where, d.Raw, dims)
			}
			dims = d.Raw
		}
		var text []string
		r.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
			if p.Get("text").Type != gjson.String {
				t.fail("%s has a part that is not text", where)
				return false
			}
			text = append(text, p.Get("text").Str)
			return true
		})
		if len(text) == 0 {
			t.fail("%s has no text to embed", where)
		}
		return strings.Join(text, "\n")
	}
	if reqs := root.Get("requests"); reqs.Exists() {
		var in []string
		reqs.ForEach(func(i, r gjson.Result) bool {
			in = append(in, jsonString(one(r, "requests["+i.String()+"]")))
			return t.err == nil
		})
		t.setRaw("input", "["+strings.Join(in, ",")+"]")
	} else {
		t.setRaw("input", jsonString(one(root, "the request")))
	}
	if dims != "" {
		t.setRaw("dimensions", dims)
	}
}

// CheckGeminiEmbeddings rejects a Gemini embeddings body the API would
// answer with a 400: no content, a content without parts, no requests or
// more than MaxGeminiEmbedInputs of them.
func CheckGeminiEmbeddings(body []byte) error {
	root := gjson.ParseBytes(body)
	reqs := root.Get("requests")
	if !reqs.Exists() {
		if len(root.Get("content.parts").Array()) == 0 {
			return errors.New("a Gemini embeddings request needs a content with parts (or requests, for many inputs)")
		}
		return nil
	}
	n := len(reqs.Array())
	switch {
	case !reqs.IsArray() || n == 0:
		return errors.New("requests of a Gemini embeddings request must be a non-empty array")
	case n > MaxGeminiEmbedInputs:
		return fmt.Errorf("a Gemini embeddings request holds at most %d inputs, this one %d: split the line", MaxGeminiEmbedInputs, n)
	}
	for i, r := range reqs.Array() {
		if len(r.Get("content.parts").Array()) == 0 {
			return fmt.Errorf("requests[%d] of a Gemini embeddings request has no content with parts", i)
		}
	}
	return nil
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
