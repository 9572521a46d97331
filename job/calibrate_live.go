package job

import (
	"context"

	"github.com/llmrun/llmrun/forecast"
)

// liveSample bounds the requests a live run has the provider count before
// it starts: enough to seed the first reservations within a few percent,
// few enough to cost seconds.
func liveSample() forecast.CalibrateOptions {
	return forecast.CalibrateOptions{MaxSample: 30, MinSample: 10, Band: 0.05}
}

// liveCalibrateMin is the fewest requests a live run has counted first:
// below it the first answers' usage calibrates the estimate soon enough,
// and the counting calls would cost a small run more time than they save.
const liveCalibrateMin = 1000

// calibrateLive has the primary provider count a small sample of the
// input (Anthropic's count_tokens, Gemini's countTokens; not with
// --offline, nor without a key) so that the run's first reservations use
// the provider's count rather than bytes/4; usage refines it as the
// answers come. A failure only warns: the run calibrates from usage then.
func (b *batch) calibrateLive(ctx context.Context) error {
	if b.o.Cost.Offline || b.total < liveCalibrateMin || b.routes[0].Pool != "" {
		return nil
	}
	key := b.primary.Key(b.io.Getenv)
	if b.primaryAt.KeyEnv != "" {
		key = b.io.Getenv(b.primaryAt.KeyEnv)
	}
	if key == "" {
		return nil
	}
	counter := newTokenCounter(b.primary.Name, b.routes[0].Provider.BaseURL(), key)
	if counter == nil {
		return nil
	}
	est := &forecast.Estimate{}
	for m, n := range b.modelCounts {
		est.Models = append(est.Models, forecast.ModelEstimate{Model: m, Requests: n})
		est.Requests += n
	}
	cfg := forecast.EstimateConfig{Source: b.src, Admission: b.primary.Admission, Estimator: b.estimator}
	cal, err := forecast.Calibrate(ctx, cfg, est, counter, liveSample())
	if err != nil {
		b.io.warnf("%s count_tokens: %v; input reservations calibrate from the answers' usage instead", b.primary.Name, err)
	}
	b.inputRatios = map[string]float64{}
	for m, c := range cal {
		b.inputRatios[m] = c.Ratio
	}
	return nil
}
