package mock

// Azure OpenAI's documented TPM rule (wire-formats §6.3): at admission a
// request is charged an estimate of its prompt tokens plus its max_tokens
// into the per-minute token counter, over the limit it is a 429, and the
// charge is not the billed count: a short answer gets nothing back. With
// Config.AzureChargeMaxTokens the mock's Azure dialect charges so, into
// the input-token bucket (ITPM), which its x-ratelimit-*-tokens headers
// report, so the remaining tokens drop by prompt + max_tokens.

// azureDefaultCap is what a request without max_tokens is charged for its
// output (Azure assumes the model's maximum; any large figure will do).
const azureDefaultCap = 4096

// capCharge is what admitting req charges beyond its input tokens.
func (s *Server) capCharge(d dialect, req *request) int {
	if _, ok := d.(azure); !ok || !s.cfg.AzureChargeMaxTokens || req.embed != nil {
		return 0
	}
	if req.maxTokens > 0 {
		return req.maxTokens
	}
	return azureDefaultCap
}
