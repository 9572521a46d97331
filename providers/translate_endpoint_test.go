package providers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestTranslateEndpoint: a Responses request reaches Anthropic as the
// Messages request asking the same; chat requests translate as before;
// embeddings refuse clearly; the same format is untouched.
func TestTranslateEndpoint(t *testing.T) {
	resp := `{"model":"gpt-4.1","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"Look:"},{"type":"input_image","image_url":"https://x/cat.png"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A cat."}]},{"role":"user","content":"Sure?"}],"max_output_tokens":64,"temperature":0.5,"store":false,"reasoning":{"effort":"low"}}`
	out, ep, err := TranslateEndpoint([]byte(resp), FormatOpenAI, EndpointResponses, FormatAnthropic)
	if err != nil || ep != EndpointChat {
		t.Fatal(err, ep)
	}
	sameJSON(t, out, `{"model":"gpt-4.1","system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"Look:"},{"type":"image","source":{"type":"url","url":"https://x/cat.png"}}]},{"role":"assistant","content":[{"type":"text","text":"A cat."}]},{"role":"user","content":"Sure?"}],"max_tokens":64,"temperature":0.5}`)

	chat, err := ResponsesToChat([]byte(`{"model":"m","input":"Hi","text":{"format":{"type":"json_schema","name":"r","schema":{"type":"object"},"strict":true}},"user":"u1"}`))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, chat, `{"model":"m","messages":[{"role":"user","content":"Hi"}],"user":"u1","response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"},"strict":true}}}`)

	same := []byte(`{"model":"m","input":"x"}`)
	if out, ep, err := TranslateEndpoint(same, FormatOpenAI, EndpointResponses, FormatOpenAI); err != nil || ep != EndpointResponses || &out[0] != &same[0] {
		t.Error("the same format must return the body itself")
	}
	if _, ep, err := TranslateEndpoint([]byte(`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`), FormatAnthropic, EndpointChat, FormatOpenAI); err != nil || ep != EndpointChat {
		t.Errorf("chat: %v", err)
	}
	for name, tc := range map[string]struct {
		body string
		ep   Endpoint
		want string
	}{
		"embeddings":       {`{"model":"e","input":"x"}`, EndpointEmbeddings, "embeddings request cannot fall back to a chat API"},
		"server state":     {`{"model":"m","input":"x","previous_response_id":"resp_1"}`, EndpointResponses, "previous_response_id refers to state"},
		"tools":            {`{"model":"m","input":"x","tools":[{"type":"web_search"}]}`, EndpointResponses, "has tools"},
		"a function call":  {`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"o"}]}`, EndpointResponses, "function_call_output item"},
		"an image file id": {`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, EndpointResponses, "file_id"},
		"no input":         {`{"model":"m"}`, EndpointResponses, "no input"},
	} {
		_, _, err := TranslateEndpoint([]byte(tc.body), FormatOpenAI, tc.ep, FormatAnthropic)
		var te *TranslateError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !asTranslate(err, &te) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func asTranslate(err error, te **TranslateError) bool {
	e, ok := err.(*TranslateError)
	*te = e
	return ok
}

// TestTranslateEmbeddings: an embeddings request goes between OpenAI's
// shape and Gemini's both ways (one input a content, many requests;
// dimensions outputDimensionality), and there and back again is the same
// request; what has no equivalent refuses with a *TranslateError.
func TestTranslateEmbeddings(t *testing.T) {
	for name, tc := range map[string]struct{ openai, gemini string }{
		"one": {`{"model":"text-embedding-004","input":"hello"}`,
			`{"model":"text-embedding-004","content":{"parts":[{"text":"hello"}]}}`},
		"one, dims": {`{"model":"e","input":"hello","dimensions":8}`,
			`{"model":"e","content":{"parts":[{"text":"hello"}]},"outputDimensionality":8}`},
		"many": {`{"model":"e","input":["a","b \"q\""],"dimensions":4}`,
			`{"model":"e","requests":[{"content":{"parts":[{"text":"a"}]},"outputDimensionality":4},{"content":{"parts":[{"text":"b \"q\""}]},"outputDimensionality":4}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			g, ep, err := TranslateEndpoint([]byte(tc.openai), FormatOpenAI, EndpointEmbeddings, FormatGemini)
			if err != nil || ep != EndpointEmbeddings {
				t.Fatal(err, ep)
			}
			sameJSON(t, g, tc.gemini)
			back, _, err := TranslateEndpoint(g, FormatGemini, EndpointEmbeddings, FormatOpenAI)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, back, tc.openai)
		})
	}
	// Gemini's task type has nothing to change at OpenAI; text parts join.
	oa, _, err := TranslateEndpoint([]byte(`{"content":{"parts":[{"text":"a"},{"text":"b"}]},"taskType":"RETRIEVAL_QUERY"}`), FormatGemini, EndpointEmbeddings, FormatOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, oa, `{"input":"a\nb"}`)
	for name, tc := range map[string]struct {
		body     string
		from, to Format
		want     string
	}{
		"token ids":      {`{"model":"e","input":[[1,2]]}`, FormatOpenAI, FormatGemini, "token-id"},
		"base64":         {`{"model":"e","input":"x","encoding_format":"base64"}`, FormatOpenAI, FormatGemini, "floats only"},
		"unknown field":  {`{"model":"e","input":"x","extra":1}`, FormatOpenAI, FormatGemini, "extra has no Gemini equivalent"},
		"to anthropic":   {`{"model":"e","input":"x"}`, FormatOpenAI, FormatAnthropic, "cannot fall back to a chat API"},
		"a title":        {`{"content":{"parts":[{"text":"a"}]},"title":"T"}`, FormatGemini, FormatOpenAI, "title"},
		"an image":       {`{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}}`, FormatGemini, FormatOpenAI, "not text"},
		"two dimensions": {`{"requests":[{"content":{"parts":[{"text":"a"}]},"outputDimensionality":4},{"content":{"parts":[{"text":"b"}]},"outputDimensionality":8}]}`, FormatGemini, FormatOpenAI, "one for all"},
	} {
		_, _, err := TranslateEndpoint([]byte(tc.body), tc.from, EndpointEmbeddings, tc.to)
		var te *TranslateError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !asTranslate(err, &te) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
