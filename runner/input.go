package runner

import "github.com/llmrun/llmrun/estimate"

// inputCounter is a budget that says whether a key's admissions read the
// input count (limiter.Limiter's does); a budget that does not say (a
// shared one) is taken to read it.
type inputCounter interface{ CountsInput(key string) bool }

// needsInput reports whether anything h's next admission holds is
// denominated in input tokens: the key's input or combined-token bucket
// (given, or learned from headers or 429s mid-run), a day's token budget,
// or the --max-cost reservation.
func (r *run) needsInput(h *hop) bool {
	if r.spend != nil || (r.cfg.Days != nil && r.cfg.Days.CountsTokens()) {
		return true
	}
	ic, ok := r.cfg.Limiter.(inputCounter)
	return !ok || ic.CountsInput(h.key)
}

// fillInput sets h.raw before an admission: the tokenizer's count (tiktoken
// for an OpenAI model: 40–70 µs a prompt, once the costliest step of a
// request) once something reads it, else the body's bytes/4, a
// placeholder only the reservation's bookkeeping sees, which the answer's
// usage settles. Asked at each admission, so a token limit learned
// mid-run turns the count on for the requests admitted after it.
func (r *run) fillInput(h *hop) {
	if h.rawExact {
		return
	}
	// Without a tokenizer the count is bytes/4 of the prompt, cheap: it is
	// kept, so the key's calibration goes on as before.
	if r.needsInput(h) || !r.cfg.Estimator.HasTokenizer(h.req.Model) {
		r.exactInput(h)
		return
	}
	h.raw = estimate.ByBytes(len(h.req.Body))
}

// exactInput returns h's input estimate by the model's tokenizer (bytes/4
// of the prompt's text for a model without one), counted once per hop.
func (r *run) exactInput(h *hop) int64 {
	if !h.rawExact {
		h.raw = r.cfg.Estimator.RawInputTokens(h.req.Model, h.route.Admission.PromptText(h.req))
		h.rawExact = true
	}
	return h.raw
}
