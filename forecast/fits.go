package forecast

import (
	"fmt"

	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

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
			in = estimate.ByBytes(len(text))
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
