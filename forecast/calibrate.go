package forecast

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/llmrun/llmrun/providers"
)

// TokenCounter asks a provider how many input tokens a request has
// (Anthropic's count_tokens, Gemini's countTokens): free, and rate-limited
// apart from generation.
type TokenCounter interface {
	CountTokens(ctx context.Context, req *providers.Request) (int64, error)
}

// CalibrateOptions bound the sample Calibrate takes.
type CalibrateOptions struct {
	// MaxSample is the most requests counted by the provider (300 if 0).
	MaxSample int
	// Band is the relative half-width of the 95% band at which a model's
	// sampling stops early (0.01 if 0); MinSample the fewest counted per
	// model before it may (30 if 0).
	Band      float64
	MinSample int
	// Seed orders the sample (the same input samples the same lines).
	Seed uint64
}

// ModelCalibration is how a model's local input count was calibrated.
type ModelCalibration struct {
	// Sample is the number of requests the provider counted; Ratio the
	// provider's total over the local count of the same requests.
	Sample int     `json:"sample"`
	Ratio  float64 `json:"ratio"`
	// InputTokensLow and InputTokensHigh are the 95% band of the model's
	// extrapolated input tokens.
	InputTokensLow  int64 `json:"input_tokens_low"`
	InputTokensHigh int64 `json:"input_tokens_high"`

	halfWidth float64 // of the ratio's 95% band
}

// sampled is one request of the sample: its local count and, once asked,
// the provider's.
type sampled struct {
	req           *providers.Request
	local, server float64
}

// Calibrate asks counter for the input tokens of a sample of the pending
// requests est counted (at most MaxSample, spread over the file and over
// the models: each model gets a share in proportion to its requests, at
// least MinSample, taken at even steps through its requests and asked in a
// seeded random order so that a sample cut short is still spread), and
// returns per model the ratio of the provider's count to the local one
// over its sample (a ratio estimator) with its 95% band: RunEstimate with
// EstimateConfig.Calibration scales each request's local count by it. A
// model whose sample could not be counted is left out; the first error is
// returned with what was done.
func Calibrate(ctx context.Context, cfg EstimateConfig, est *Estimate, counter TokenCounter, o CalibrateOptions) (map[string]*ModelCalibration, error) {
	o = o.withDefaults()
	samples, err := est.pickSample(cfg, est.quotas(o))
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 24))
	out := map[string]*ModelCalibration{}
	var firstErr error
	for _, m := range est.Models {
		s := samples[m.Model]
		rng.Shuffle(len(s), func(a, b int) { s[a], s[b] = s[b], s[a] })
		n, err := countSample(ctx, counter, s, o, m.Requests)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", m.Model, err)
		}
		if n == 0 {
			continue
		}
		c := ratioEstimate(s[:n], m.Requests)
		out[m.Model] = &ModelCalibration{Sample: n, Ratio: c.ratio, halfWidth: c.halfWidth}
	}
	return out, firstErr
}

// finish sets the band of a calibrated model's input tokens from the local
// count it scaled.
func (c *ModelCalibration) finish(local int64) *ModelCalibration {
	d := *c
	d.InputTokensLow = int64(math.Floor(float64(local) * max(c.Ratio-c.halfWidth, 0)))
	d.InputTokensHigh = int64(math.Ceil(float64(local) * (c.Ratio + c.halfWidth)))
	d.Ratio = math.Round(c.Ratio*10000) / 10000
	return &d
}

func (o CalibrateOptions) withDefaults() CalibrateOptions {
	if o.MaxSample <= 0 {
		o.MaxSample = 300
	}
	if o.Band <= 0 {
		o.Band = 0.01
	}
	if o.MinSample <= 0 {
		o.MinSample = 30
	}
	return o
}

// quotas shares MaxSample among the models in proportion to their
// requests, at least MinSample each (or all of a smaller model's), never
// more than MaxSample in all.
func (e *Estimate) quotas(o CalibrateOptions) map[string]int {
	q := map[string]int{}
	left := o.MaxSample
	for _, m := range e.Models {
		share := int(float64(o.MaxSample) * float64(m.Requests) / float64(max(e.Requests, 1)))
		q[m.Model] = int(min(m.Requests, int64(max(share, o.MinSample))))
	}
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return q[names[i]] < q[names[j]] })
	for _, n := range names { // the smallest first keep their share
		q[n] = min(q[n], left)
		left -= q[n]
	}
	return q
}

// pickSample reads the source again and keeps, per model, quota requests
// at even steps through the model's pending requests.
func (e *Estimate) pickSample(cfg EstimateConfig, quota map[string]int) (map[string][]sampled, error) {
	total := map[string]int64{}
	for _, m := range e.Models {
		total[m.Model] = m.Requests
	}
	seen := map[string]int64{}
	out := map[string][]sampled{}
	err := cfg.Source.Each(func(req *providers.Request) error {
		if cfg.Recorded != nil {
			if _, done := cfg.Recorded.Done[req.ID]; done {
				return nil
			}
		}
		k, n := int64(quota[req.Model]), total[req.Model]
		i := seen[req.Model]
		seen[req.Model]++
		// Request i is taken when it crosses the next of k even steps.
		if k == 0 || (i*k)/n == ((i+1)*k)/n {
			return nil
		}
		out[req.Model] = append(out[req.Model], sampled{req: req, local: float64(cfg.Estimator.RawInputTokens(req.Model, cfg.Admission.PromptText(req)))})
		return nil
	})
	return out, err
}

// countSample asks counter for the sample in order until the 95% band is
// within o.Band (after o.MinSample) or the sample is done, and returns
// how many it counted.
func countSample(ctx context.Context, counter TokenCounter, s []sampled, o CalibrateOptions, population int64) (int, error) {
	for i := range s {
		if i >= o.MinSample {
			if c := ratioEstimate(s[:i], population); c.ratio > 0 && c.halfWidth/c.ratio <= o.Band {
				return i, nil
			}
		}
		n, err := counter.CountTokens(ctx, s[i].req)
		if err != nil {
			return i, err
		}
		s[i].server = float64(n)
	}
	return len(s), nil
}

// calibration is a ratio estimate and its 95% half-width.
type calibration struct{ ratio, halfWidth float64 }

// ratioEstimate is the ratio of sums over the sample and the half-width of
// its 95% band, by the usual linearisation with the finite-population
// correction (a sample of all requests is exact).
func ratioEstimate(s []sampled, population int64) calibration {
	var sx, sy float64
	for _, x := range s {
		sx, sy = sx+x.local, sy+x.server
	}
	n := float64(len(s))
	if sx == 0 || n == 0 {
		return calibration{}
	}
	r := sy / sx
	if n < 2 {
		return calibration{ratio: r, halfWidth: r}
	}
	var ss float64
	for _, x := range s {
		d := x.server - r*x.local
		ss += d * d
	}
	fpc := max(1-n/float64(max(population, 1)), 0)
	se := math.Sqrt(fpc*ss/(n-1)/n) / (sx / n)
	return calibration{ratio: r, halfWidth: 1.96 * se}
}
