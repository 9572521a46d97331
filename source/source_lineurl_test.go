package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// TestURLOrMethodAShapeCannotHonourIsAnInputError: a line's url or method
// that asks for what its shape cannot be (embeddings from a simple line, a
// url other than /v1/messages or a GET beside params) was silently run as
// chat. It is refused at the check, naming the file and line and the
// member, under every provider format.
func TestURLOrMethodAShapeCannotHonourIsAnInputError(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`{"custom_id":"a","url":"/v1/embeddings","prompt":"x"}`, []string{`url "/v1/embeddings" on a simple line`, "chat request", `{"url":"/v1/embeddings","body":`}},
		{`{"custom_id":"a","url":"/embeddings","prompt":"x","model":"e"}`, []string{`url "/embeddings" on a simple line`}},
		{`{"custom_id":"a","url":"/v1/responses","prompt":"x"}`, []string{`url "/v1/responses" on a simple line`, `{"url":"/v1/responses","body":`}},
		{`{"custom_id":"a","url":"/v1/images/generations","prompt":"x"}`, []string{`url "/v1/images/generations" on a simple line`, "url /v1/chat/completions, or none"}},
		{`{"custom_id":"a","url":5,"prompt":"x"}`, []string{"url must be a string, not 5"}},
		{`{"custom_id":"a","method":"GET","prompt":"x"}`, []string{`method "GET" is not supported (only POST)`}},
		{`{"custom_id":"a","url":"/v1/embeddings",` + shapeMembers["params"] + `}`, []string{`url "/v1/embeddings" does not fit a request in Anthropic's shape`, "/v1/messages", `{"url":"/v1/embeddings","body":`}},
		{`{"custom_id":"a","url":"/v1/chat/completions",` + shapeMembers["params"] + `}`, []string{`url "/v1/chat/completions" does not fit a request in Anthropic's shape`}},
		{`{"custom_id":"a","method":"GET",` + shapeMembers["params"] + `}`, []string{`method "GET" is not supported (only POST)`}},
		{`{"custom_id":"a","method":"GET","url":"/v1/messages",` + shapeMembers["params"] + `}`, []string{`method "GET"`}},
		{`{"custom_id":"a","url":["/v1/messages"],` + shapeMembers["params"] + `}`, []string{`url must be a string, not ["/v1/messages"]`}},
		{`{"key":"a","method":"DELETE",` + shapeMembers["request"] + `}`, []string{`method "DELETE" is not supported (only POST)`}},
		{`{"custom_id":"a","method":1,` + shapeMembers["body"] + `}`, []string{"method 1 is not supported (only POST)"}},
	} {
		for _, f := range []providers.Format{providers.FormatOpenAI, providers.FormatAnthropic, providers.FormatGemini} {
			path := filepath.Join(t.TempDir(), "in.jsonl")
			os.WriteFile(path, []byte(`{"custom_id":"ok","prompt":"hi"}`+"\n\n"+tc.line+"\n"), 0o644)
			_, err := (&Source{Path: path, Parser: Parser{Format: f, Defaults: LineDefaults{Model: "m"}}}).Check()
			var ie *InputError
			if !errors.As(err, &ie) || ie.Path != path || ie.Line != 3 {
				t.Errorf("%v: %s: Check = %v; want an input error at %s:3", f, tc.line, err, path)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(ie.Msg, w) {
					t.Errorf("%v: %s: %q does not say %q", f, tc.line, ie.Msg, w)
				}
			}
		}
	}
}

// TestURLAndMethodEachShapeTakes: what is legitimate stays accepted, on
// the endpoint it names: OpenAI batch lines with method and url, Anthropic
// batch lines with none (or with POST and /v1/messages), Gemini lines with
// or without a url, a simple line with a chat url or POST, and a null url
// or method, which asks for nothing in any shape.
func TestURLAndMethodEachShapeTakes(t *testing.T) {
	for _, tc := range []struct {
		line string
		ep   providers.Endpoint
	}{
		{`{"custom_id":"a","method":"POST","url":"/v1/chat/completions",` + shapeMembers["body"] + `}`, providers.EndpointChat},
		{`{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"e","input":"x"}}`, providers.EndpointEmbeddings},
		{`{"custom_id":"a","method":null,"url":null,` + shapeMembers["body"] + `}`, providers.EndpointChat},
		{`{"custom_id":"a",` + shapeMembers["params"] + `}`, providers.EndpointChat},
		{`{"custom_id":"a","method":"POST","url":"/v1/messages",` + shapeMembers["params"] + `}`, providers.EndpointChat},
		{`{"custom_id":"a","method":null,"url":null,` + shapeMembers["params"] + `}`, providers.EndpointChat},
		{`{"key":"a","url":"/v1/chat/completions","method":"POST",` + shapeMembers["request"] + `}`, providers.EndpointChat},
		{`{"key":"a","url":null,"request":{"content":{"parts":[{"text":"x"}]}}}`, providers.EndpointEmbeddings},
		{`{"custom_id":"a","url":"/v1/chat/completions","method":"POST","prompt":"x"}`, providers.EndpointChat},
		{`{"custom_id":"a","url":"/chat/completions","prompt":"x"}`, providers.EndpointChat},
		{`{"custom_id":"a","url":null,"method":null,"prompt":"x"}`, providers.EndpointChat},
	} {
		for _, f := range []providers.Format{providers.FormatOpenAI, providers.FormatGemini, providers.FormatAnthropic} {
			if tc.ep == providers.EndpointEmbeddings && f == providers.FormatAnthropic {
				continue // Anthropic has no embeddings API
			}
			p := Parser{Format: f, Defaults: LineDefaults{Model: "m"}}
			req, err := p.Parse([]byte(tc.line), 1)
			if err != nil {
				t.Errorf("%v: %s: %v", f, tc.line, err)
				continue
			}
			if req.Endpoint != tc.ep {
				t.Errorf("%v: %s: endpoint %v, want %v", f, tc.line, req.Endpoint, tc.ep)
			}
		}
	}
	// A template's records are data: their url is a field like any other.
	tmpl, err := ParseTemplate("t", "{{.url}}")
	if err != nil {
		t.Fatal(err)
	}
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}, Template: tmpl}
	if _, err := p.Parse([]byte(`{"url":"/v1/embeddings","method":"GET"}`), 1); err != nil {
		t.Errorf("template record with url and method: %v", err)
	}
}
