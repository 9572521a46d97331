package source

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// TestParseEndpoints: an OpenAI batch line's url picks its endpoint; a
// Responses line's max_output_tokens is its cap; a Responses line for
// Anthropic becomes a Messages request; an embeddings line cannot go to
// Anthropic, and lines without what their endpoint needs are refused at
// the check, naming why.
func TestParseEndpoints(t *testing.T) {
	oa := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m-default"}}
	an := Parser{Format: providers.FormatAnthropic}
	ok := map[string]struct {
		p     Parser
		line  string
		ep    providers.Endpoint
		max   int
		model string
		check string // a gjson path that must exist in the body
	}{
		"responses":               {oa, `{"custom_id":"r","method":"POST","url":"/v1/responses","body":{"model":"gpt-4.1","input":"hi","max_output_tokens":32}}`, providers.EndpointResponses, 32, "gpt-4.1", "input"},
		"responses, no /v1":       {oa, `{"custom_id":"r","url":"/responses","body":{"input":[{"role":"user","content":"hi"}]}}`, providers.EndpointResponses, 0, "m-default", "input.0"},
		"embeddings, array":       {oa, `{"custom_id":"e","url":"/v1/embeddings","body":{"model":"text-embedding-3-small","input":["a","b"]}}`, providers.EndpointEmbeddings, 0, "text-embedding-3-small", "input.1"},
		"embeddings, token ids":   {oa, `{"custom_id":"e","url":"/v1/embeddings","body":{"model":"e","input":[[1,2],[3]]}}`, providers.EndpointEmbeddings, 0, "e", "input"},
		"chat stays chat":         {oa, `{"custom_id":"c","url":"/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"x"}]}}`, providers.EndpointChat, 0, "m", "messages"},
		"responses for anthropic": {an, `{"custom_id":"r","url":"/v1/responses","body":{"model":"claude-x","instructions":"brief","input":"hi","max_output_tokens":40}}`, providers.EndpointChat, 40, "claude-x", "system"},
	}
	for name, tt := range ok {
		req, err := tt.p.Parse([]byte(tt.line), 1)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if req.Endpoint != tt.ep || req.MaxTokens != tt.max || req.Model != tt.model || !gjson.GetBytes(req.Body, tt.check).Exists() {
			t.Errorf("%s: endpoint %v max %d model %q body %s", name, req.Endpoint, req.MaxTokens, req.Model, req.Body)
		}
	}
	bad := map[string]struct {
		p    Parser
		line string
		want string
	}{
		"responses without input":   {oa, `{"url":"/v1/responses","body":{"model":"m","input":""}}`, "needs an input"},
		"embeddings without input":  {oa, `{"url":"/v1/embeddings","body":{"model":"m","input":[]}}`, "needs an input"},
		"an empty embeddings input": {oa, `{"url":"/v1/embeddings","body":{"model":"m","input":["a",""]}}`, "input[1] of an embeddings request is empty"},
		"embeddings for anthropic":  {an, `{"url":"/v1/embeddings","body":{"model":"m","input":"x"}}`, "cannot fall back to a chat API"},
		"unknown url":               {oa, `{"url":"/v1/images/generations","body":{"prompt":"x"}}`, "/v1/responses or /v1/embeddings"},
	}
	for name, tt := range bad {
		if _, err := tt.p.Parse([]byte(tt.line), 1); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", name, err, tt.want)
		}
	}
}
