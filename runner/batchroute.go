package runner

import (
	"encoding/json"
	"time"

	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
)

// What the batch-API route (package offline) shares with the live run:
// the same counters, summary and output-line costs, so that both routes
// report alike.

// Summary returns the run's summary after wall time.
func (c *Counters) Summary(wall time.Duration) *Summary { return c.summary(wall) }

// ChargeBatch prices u at provider's batch price for model, books it in
// the run's costs and returns the line's cost_usd (null when unpriced).
func (c *Counters) ChargeBatch(t *pricing.Table, provider, model string, u providers.Usage) json.RawMessage {
	cost, known := priceOf(t, provider, model, u, true)
	c.costs.add(provider, model, u, cost, known)
	if !known {
		return spend{unpriced: 1}.json()
	}
	return spend{cost: cost, priced: 1}.json()
}
