package forecast

import (
	"encoding/json"
	"testing"
)

// TestEstimateJSONBytes pins `estimate --json`'s members and their order,
// for the total and a model's part alike: scripts read them.
func TestEstimateJSONBytes(t *testing.T) {
	n, c := int64(5), 0.25
	var e Estimate
	e.Requests, e.AlreadyDone, e.CacheHits = 3, 1, 2
	e.InputTokens, e.InputApproximate, e.OutputTokensMax, e.OutputTokensExpected = 10, true, 20, &n
	e.CostUSDMax, e.CostUSDExpected, e.BatchCostUSDMax, e.BatchCostUSDExpected = &c, &c, &c, nil
	e.BoundBy, e.PricesDate, e.Unpriced = "rpm", "2026-01-01", []string{"x"}
	var m ModelEstimate
	m.Model, m.Requests, m.PricedAs, m.PricedProvider = "m", 3, "m-1", "openai"
	m.InputTokens, m.OutputTokensMax, m.CostUSDMax = 10, 20, &c
	m.Calibration = &ModelCalibration{Sample: 1, Ratio: 1.5}
	e.Models = []ModelEstimate{m}
	got, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"requests":3,"already_done":1,"cache_hits":2,"input_tokens":10,"input_tokens_approximate":true,` +
		`"output_tokens_max":20,"output_tokens_expected":5,"cost_usd_max":0.25,"cost_usd_expected":0.25,` +
		`"batch_cost_usd_max":0.25,"batch_cost_usd_expected":null,"wall_seconds":null,"bound_by":"rpm",` +
		`"prices_date":"2026-01-01","unpriced_models":["x"],"models":[{"model":"m","requests":3,"input_tokens":10,` +
		`"input_tokens_approximate":false,"output_tokens_max":20,"output_tokens_expected":null,"cost_usd_max":0.25,` +
		`"cost_usd_expected":null,"batch_cost_usd_max":null,"batch_cost_usd_expected":null,"priced_as":"m-1",` +
		`"priced_provider":"openai","calibration":{"sample":1,"ratio":1.5,"input_tokens_low":0,"input_tokens_high":0}}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
