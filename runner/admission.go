package runner

import (
	"fmt"

	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// key names the budget and breaker a request shares with others.
func (r *run) key(route Route, req *providers.Request) string {
	if route.Pool != "" {
		return route.Pool
	}
	p := route.Provider
	return p.Name() + "|" + p.BaseURL() + "|" + req.Model
}

// cost is what one attempt reserves, by the key's reservation rule (the
// registry's, until the headers show another: charge.go): the calibrated
// input estimate, and the output cap or the output the key is expected to
// produce.
func (r *run) cost(key string, route Route, req *providers.Request, rawInput int64) limiter.Cost {
	out := route.Admission.OutputCap(req)
	if r.reserveRule(key, route) == providers.ReserveExpected && out > 0 {
		out = r.cfg.Estimator.ExpectedOutput(key, out)
	}
	return limiter.Cost{Requests: 1, Input: r.cfg.Estimator.Calibrate(key, rawInput), Output: out}
}

// FitsLimits returns a Validate function that rejects a request no budget
// under lim could ever admit (its input or output alone above a per-minute
// limit), so such a request is an input error at the check, before
// anything is sent, rather than a failure mid-run. Input is estimated as
// bytes/4, tokenized exactly only when that comes near a limit.
func FitsLimits(lim limiter.Limits, est *estimate.Estimator, rule providers.Admission) func(*providers.Request) error {
	return func(req *providers.Request) error {
		out := rule.OutputCap(req)
		var in int64
		if lim.ITPM > 0 || lim.TPM > 0 { // else the prompt's size matters to no limit
			text := rule.PromptText(req)
			in = int64(len(text)+3) / 4
			near := func(limit float64) bool { return limit > 0 && float64(in) > limit/2 }
			if near(lim.ITPM) || near(lim.TPM) {
				in = est.RawInputTokens(req.Model, text)
			}
		}
		switch {
		case lim.ITPM > 0 && float64(in) > lim.ITPM:
			return fmt.Errorf("about %d input tokens exceed --itpm %g: no minute's budget can admit this request", in, lim.ITPM)
		case lim.OTPM > 0 && float64(out) > lim.OTPM:
			return fmt.Errorf("max_tokens %d exceeds --otpm %g: no minute's budget can admit this request", out, lim.OTPM)
		case lim.TPM > 0 && float64(in+out) > lim.TPM:
			return fmt.Errorf("about %d input tokens + max_tokens %d exceed --tpm %g: no minute's budget can admit this request", in, out, lim.TPM)
		}
		return nil
	}
}
