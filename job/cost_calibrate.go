package job

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
)

// calibrateEstimate asks the provider's counting endpoint for a sample of
// the pending requests (when it has one, a key is set and --offline is
// not given) and estimates again with each sampled model's input scaled
// by what the provider counted. A failed count is a warning: the local
// estimate stands for the models it could not calibrate.
func calibrateEstimate(io *IO, o *BatchOptions, entry *registry.Entry, cfg runner.EstimateConfig, est *runner.Estimate) (*runner.Estimate, error) {
	if o.Cost.Offline || est.Requests == 0 {
		return est, nil
	}
	counter := counterFor(entry, o.BaseURL, io.Getenv)
	if counter == nil {
		return est, nil
	}
	cal, err := runner.Calibrate(context.Background(), cfg, est, counter, runner.CalibrateOptions{})
	if err != nil {
		io.warnf("estimate: %s count_tokens: %v; the models it did not count keep the local estimate", entry.Name, err)
	}
	if len(cal) == 0 {
		return est, nil
	}
	cfg.Calibration = cal
	return runner.RunEstimate(cfg)
}

// printCalibration says which models' input the provider's count
// calibrated, on how many requests, and how close that makes it.
func printCalibration(w io.Writer, e *runner.Estimate, provider string) {
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
