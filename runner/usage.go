package runner

import "github.com/llmrun/llmrun/providers"

// estimateUsage fills in the usage of an answer that reported none (local
// servers often omit it, and a stream without it would otherwise count 0
// tokens against the budget and the cost): the input as the attempt's
// estimate, the output from the answer's text, both marked Estimated. An
// answer with any usage is left alone.
func (r *run) estimateUsage(h *hop, resp *providers.Response) {
	u := &resp.Usage
	if u.InputTokens != 0 || u.OutputTokens != 0 || u.CacheReadTokens != 0 {
		return
	}
	u.InputTokens = r.exactInput(h)
	if resp.Text != "" {
		u.OutputTokens = r.cfg.Estimator.RawInputTokens(h.req.Model, []byte(resp.Text))
	}
	u.Estimated = true
}
