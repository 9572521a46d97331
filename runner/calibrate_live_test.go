package runner

import (
	"context"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// TestSeedCalibration: Config.InputRatios set the primary route's input
// calibration before the first response, so the first reservation is the
// provider's count; a pooled route is left alone.
func TestSeedCalibration(t *testing.T) {
	cfg, store := testRun(t, t.TempDir(), 1, &slowProvider{}, func(c *Config) { c.InputRatios = map[string]float64{"m": 1.5} })
	defer store.Close()
	r := newRun(context.Background(), cfg)
	key := r.key(cfg.Routes[0], &providers.Request{Model: "m"})
	if got := r.cost(key, cfg.Routes[0], &providers.Request{Model: "m"}, 100).Input; got != 150 {
		t.Errorf("first reservation of 100 raw tokens: %d, want 150", got)
	}
	cfg2, store2 := testRun(t, t.TempDir(), 1, &slowProvider{}, func(c *Config) {
		c.InputRatios = map[string]float64{"m": 1.5}
		c.Routes[0].Pool = "shared"
	})
	defer store2.Close()
	r = newRun(context.Background(), cfg2)
	if got := r.cost("shared", cfg2.Routes[0], &providers.Request{Model: "m"}, 100).Input; got != 100 {
		t.Errorf("pooled route: %d, want the raw 100", got)
	}
}
