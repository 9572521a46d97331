package runner

import "github.com/llmrun/llmrun/providers"

// seedCalibration sets the estimator's input ratio of the primary route's
// budget keys from Config.InputRatios (the provider's count of a sample):
// the first reservations then use the provider's count, not the raw
// estimate. A pooled route mixes models under one key and is left alone.
func (r *run) seedCalibration() {
	if len(r.cfg.InputRatios) == 0 || len(r.cfg.Routes) == 0 || r.cfg.Routes[0].Pool != "" || r.cfg.Estimator == nil {
		return
	}
	route := r.cfg.Routes[0]
	for model, ratio := range r.cfg.InputRatios {
		if route.Model != "" {
			model = route.Model
		}
		r.cfg.Estimator.SeedRatio(r.key(route, &providers.Request{Model: model}), ratio)
	}
}
