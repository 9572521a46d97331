package runner

import (
	"testing"

	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

func TestCostFollowsTheRouteRule(t *testing.T) {
	est := estimate.NewEstimator()
	for range 20 { // enough outputs for the p95 to be trusted
		est.ObserveOutput("k", 30)
	}
	r := &run{cfg: Config{Estimator: est}}
	req := &providers.Request{Model: "m", MaxTokens: 500}
	capped := r.cost("k", Route{}, req, 100)
	r = &run{cfg: Config{Estimator: est}} // a key's rule is fixed at its first use
	expected := r.cost("k", Route{Admission: providers.Admission{Output: providers.ReserveExpected}}, req, 100)
	if capped != (limiter.Cost{Requests: 1, Input: 100, Output: 500}) {
		t.Errorf("max_tokens rule: %+v", capped)
	}
	if expected != (limiter.Cost{Requests: 1, Input: 100, Output: 30}) {
		t.Errorf("expected-output rule: %+v", expected)
	}
}
