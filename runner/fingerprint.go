package runner

import (
	"github.com/cespare/xxhash/v2"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/providers"
)

// fingerprinter computes the checkpoint fingerprint of each request: what
// decides, on a rerun, whether the output's answer for an id still answers
// the input's request.
//
// It covers the request as the primary route sends it: the body (already
// translated to the route's wire format and filled with the run's model,
// system prompt and max tokens), the route's provider, base URL (without
// credentials: rotating a password changes no answer; Route.Endpoint
// instead if set) and model override. The endpoint too, for requests not to
// chat.
// Not the stream flag, which changes no answer, and not the fallback hops: an
// answer a fallback gave still answers the request. The body is hashed as
// it is sent; re-encoding an input line differently (other spacing, other
// key order) therefore counts as a change.
type fingerprinter struct {
	route xxhash.Digest // state after the route's part
}

func newFingerprinter(route Route) *fingerprinter {
	f := &fingerprinter{}
	f.route.Reset()
	endpoint := route.Endpoint
	if endpoint == "" {
		endpoint = route.Provider.BaseURL()
	}
	for _, s := range []string{route.Provider.Name(), endpoint, route.Model} {
		f.route.WriteString(s)
		f.route.WriteString("\x00")
	}
	return f
}

// of returns req's fingerprint, never 0 (which means unknown).
func (f *fingerprinter) of(req *providers.Request) checkpoint.Fingerprint {
	d := f.route
	if req.Endpoint != providers.EndpointChat {
		// The same body means something else at another endpoint; chat
		// adds nothing, so the fingerprints of earlier runs still hold.
		d.WriteString(req.Endpoint.Path())
		d.WriteString("\x00")
	}
	d.Write(req.Body)
	if fp := checkpoint.Fingerprint(d.Sum64()); fp != 0 {
		return fp
	}
	return 1
}
