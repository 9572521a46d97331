package source

import (
	"fmt"

	"github.com/llmrun/llmrun/providers"
)

// simpleEndpoint refuses a simple line whose url or method asks for what
// a simple line cannot be. A simple line is built into a chat request, so
// "url":"/v1/embeddings" beside a prompt would silently run as chat while
// the user asked for an embedding; a url naming chat (or a null one) and
// method POST are harmless and accepted.
func (f *lineFields) simpleEndpoint() error {
	l := providers.LineMembers{Method: f.method, URL: f.url}
	if err := l.Post(); err != nil {
		return err
	}
	u, ok, err := l.URLPath()
	if err != nil || !ok {
		return err
	}
	ep, known := providers.EndpointOf(u)
	switch {
	case known && ep == providers.EndpointChat:
		return nil
	case known:
		return fmt.Errorf("url %q on a simple line: a simple line (prompt, system, model, max_tokens) is a chat request; for %s, write an OpenAI batch line: {\"url\":\"%s\",\"body\":{\"model\":…,\"input\":…}}", u, ep, ep.Path())
	}
	return fmt.Errorf("url %q on a simple line: a simple line (prompt, system, model, max_tokens) is a chat request (url /v1/chat/completions, or none)", u)
}
