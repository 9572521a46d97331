package openai

import (
	"fmt"

	"github.com/llmrun/llmrun/providers"
)

// Line is the shape of a line of OpenAI's Batch API input file:
// {custom_id, method, url, body}. Its url picks the endpoint.
var Line = providers.LineShape{Format: providers.FormatOpenAI, Key: "body", Endpoint: lineEndpoint}

// lineEndpoint refuses a method other than POST and reads the endpoint
// from the url (chat when it names none).
func lineEndpoint(l providers.LineMembers) (providers.Endpoint, error) {
	if err := l.Post(); err != nil {
		return 0, err
	}
	u, ok, err := l.URLPath()
	if err != nil || !ok {
		return providers.EndpointChat, err
	}
	ep, ok := providers.EndpointOf(u)
	if !ok {
		return 0, fmt.Errorf("url %q is not supported (want /v1/chat/completions, /v1/responses or /v1/embeddings)", u)
	}
	return ep, nil
}
