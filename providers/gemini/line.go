package gemini

import (
	"fmt"

	"github.com/llmrun/llmrun/providers"
)

// Line is the shape of a line of Gemini's batch input file: {key,
// request}, optionally with an OpenAI-style url (and method, POST).
var Line = providers.LineShape{Format: providers.FormatGemini, Key: "request", Endpoint: lineEndpoint}

// lineEndpoint is the endpoint of a line in Gemini's shape: its url if
// it names one, else what its request is: an embedContent request (a
// content) or a batchEmbedContents one (requests) is embeddings, as
// Gemini's own embeddings batch files write them; contents is chat. A
// method other than POST is refused, as on OpenAI's lines.
func lineEndpoint(l providers.LineMembers) (providers.Endpoint, error) {
	if err := l.Post(); err != nil {
		return 0, err
	}
	u, ok, err := l.URLPath()
	if err != nil {
		return 0, err
	}
	if ok {
		ep, ok := providers.EndpointOf(u)
		if !ok || ep == providers.EndpointResponses {
			return 0, fmt.Errorf("url %q does not fit a request in Gemini's shape (want /v1/chat/completions or /v1/embeddings)", u)
		}
		return ep, nil
	}
	if r := l.Request; !r.Get("contents").Exists() && (r.Get("content").Exists() || r.Get("requests").Exists()) {
		return providers.EndpointEmbeddings, nil
	}
	return providers.EndpointChat, nil
}
