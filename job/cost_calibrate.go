package job

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/llmrun/llmrun/forecast"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers/registry"
)

// calibrateEstimate asks the provider's counting endpoint for a sample of
// the pending requests (when it has one, a key is set and --offline is
// not given) and estimates again with each sampled model's input scaled
// by what the provider counted. A failed count is a warning: the local
// estimate stands for the models it could not calibrate.
func calibrateEstimate(io *IO, o *BatchOptions, entry *registry.Entry, cfg forecast.EstimateConfig, est *forecast.Estimate) (*forecast.Estimate, error) {
	if o.Cost.Offline || est.Requests == 0 {
		return est, nil
	}
	counter := counterFor(entry, o.BaseURL, io.Getenv)
	if counter == nil {
		return est, nil
	}
	cal, err := forecast.Calibrate(context.Background(), cfg, est, counter, forecast.CalibrateOptions{})
	if err != nil {
		io.warnf("estimate: %s count_tokens: %v; the models it did not count keep the local estimate", entry.Name, err)
	}
	if len(cal) == 0 {
		return est, nil
	}
	cfg.Calibration = cal
	return forecast.RunEstimate(cfg)
}

// printCalibration says which models' input the provider's count
// calibrated, on how many requests, and how close that makes it.
func printCalibration(w io.Writer, e *forecast.Estimate, provider string) {
	for _, m := range e.Models {
		c := m.Calibration
		if c == nil || m.InputTokens == 0 {
			continue
		}
		band := 100 * float64(c.InputTokensHigh-c.InputTokensLow) / 2 / float64(m.InputTokens)
		fmt.Fprintf(w, "%s input: the local count × %.3f, from %s's count_tokens on %d sampled requests; 95%% band %d–%d (±%.1f%%).\n",
			m.Model, c.Ratio, provider, c.Sample, c.InputTokensLow, c.InputTokensHigh, math.Round(band*10)/10)
	}
}

// printLabelWarnings says what the table alone would hide: a model priced
// at another provider's list price than the one it is sent to, and an
// estimate over --max-cost.
func printLabelWarnings(w io.Writer, e *forecast.Estimate, o *BatchOptions, provider string) {
	for _, m := range e.Models {
		if m.PricedProvider != "" && m.PricedProvider != provider && knownPricer(provider) {
			fmt.Fprintf(w, "%s is priced at %s's price for %s, but is sent to %s: check the model name, or give its price with --prices FILE.\n",
				m.Model, m.PricedProvider, m.PricedAs, provider)
		}
	}
	if o.Cost.MaxCost <= 0 || e.CostUSDMax == nil || *e.CostUSDMax <= o.Cost.MaxCost {
		return
	}
	capUSD := pricing.FromUSD(o.Cost.MaxCost)
	if e.CostUSDExpected != nil && *e.CostUSDExpected > o.Cost.MaxCost {
		fmt.Fprintf(w, "over --max-cost %v: at most %v and about %v expected; the run would stop (exit 3) before the end unless the cap is raised.\n",
			capUSD, pricing.FromUSD(*e.CostUSDMax), pricing.FromUSD(*e.CostUSDExpected))
		return
	}
	fmt.Fprintf(w, "the bound %v is over --max-cost %v: the run stops (exit 3) if answers run to max tokens; raise the cap to be sure it finishes.\n",
		pricing.FromUSD(*e.CostUSDMax), capUSD)
}

// knownPricer reports whether provider has prices of its own in the list,
// so that a price found under another provider's name is a mismatch.
func knownPricer(provider string) bool {
	switch provider {
	case "openai", "anthropic", "gemini", "azure":
		return true
	}
	return false
}

// plural is "1 request" or "n requests".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orFlag is the flag's value when given, else the config's.
func orFlag(flag, config float64) float64 {
	if flag > 0 {
		return flag
	}
	return config
}

// unpricedHints says, for an unpriced model that another provider's list
// prices (gemini-2.5-flash sent to openai), which --provider it belongs
// to, and returns the unpriced models it has no such hint for.
func unpricedHints(w io.Writer, e *forecast.Estimate, o *BatchOptions, provider string) []string {
	prices, err := loadPrices(&o.Cost)
	var rest []string
	for _, model := range e.Unpriced {
		hint := ""
		for _, p := range []string{"openai", "anthropic", "gemini"} {
			if err != nil || p == provider {
				continue
			}
			if price, ok := prices.Lookup(p, model); ok && price.Provider == p {
				hint = p
				break
			}
		}
		if hint == "" {
			rest = append(rest, model)
			continue
		}
		fmt.Fprintf(w, "no %s price for %s, a %s model: did you mean --provider %s? (or give it a price with --prices FILE)\n", provider, model, hint, hint)
	}
	return rest
}
