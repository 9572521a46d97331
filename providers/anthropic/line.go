package anthropic

import (
	"fmt"
	"strings"

	"github.com/llmrun/llmrun/providers"
)

// Line is the shape of a line of Anthropic's Message Batches:
// {custom_id, params}. Its request is always a Messages (chat) request.
var Line = providers.LineShape{Format: providers.FormatAnthropic, Key: "params", Endpoint: lineEndpoint}

// lineEndpoint is chat, the only endpoint a params request is for. Anthropic's
// batch lines carry no url or method, but a line may borrow OpenAI's: a url
// other than the Messages endpoint's (/v1/embeddings, say) or a method other
// than POST asks for what params cannot be, and is refused rather than run
// as chat.
func lineEndpoint(l providers.LineMembers) (providers.Endpoint, error) {
	if err := l.Post(); err != nil {
		return 0, err
	}
	u, ok, err := l.URLPath()
	if err != nil || !ok {
		return providers.EndpointChat, err
	}
	if strings.TrimPrefix(u, "/v1") != "/messages" {
		return 0, fmt.Errorf("url %q does not fit a request in Anthropic's shape: params is a Messages request (want /v1/messages, or no url)%s", u, urlHint(u))
	}
	return providers.EndpointChat, nil
}

// urlHint says how to write the request a url beside params asks for,
// when llmrun has that endpoint.
func urlHint(u string) string {
	if ep, ok := providers.EndpointOf(u); ok && ep != providers.EndpointChat {
		return "; for " + ep.String() + ", write an OpenAI batch line: {\"url\":\"" + ep.Path() + "\",\"body\":{\"model\":…,\"input\":…}}"
	}
	return ""
}
