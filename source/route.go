package source

import "github.com/llmrun/llmrun/providers"

// Route is one hop of the fallback chain: a provider and the model it serves.
type Route struct {
	Provider providers.Provider
	// Admission is how the provider meters requests (from its registry entry).
	Admission providers.Admission
	// Model, if set, replaces the request's model on this hop.
	Model string
	// Rules, if set, are the model rules a fallback hop's body must pass
	// (the primary's bodies passed them at the check): a body the hop's
	// model family refuses fails the hop instead of being sent.
	Rules *ModelRules
	// Pool, if set, names the limiter/breaker key instead of provider+URL+model.
	Pool string
	// Endpoint, if set, stands for the provider's base URL in request
	// fingerprints: the built-in mock listens on a new loopback port each
	// run, and its answers must still count on the next.
	Endpoint string
	// Plain, if set, is Provider never streaming: when streamed requests
	// never worked, one plain request tells whether streaming is the
	// problem (see SetupError).
	Plain providers.Provider
}
