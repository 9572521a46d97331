package source

import (
	"context"
	"errors"

	"github.com/llmrun/llmrun/providers"
)

// slowProvider is the route's provider in fingerprint tests: only its name
// and base URL count (the runner's tests have the one that answers).
type slowProvider struct{}

func (p *slowProvider) Name() string             { return "fake" }
func (p *slowProvider) Format() providers.Format { return providers.FormatOpenAI }
func (p *slowProvider) BaseURL() string          { return "http://fake" }
func (p *slowProvider) Send(context.Context, *providers.Request) (*providers.Response, error) {
	return nil, errors.New("the source never sends")
}
