package runner

import (
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// key names the budget and breaker a request shares with others.
func (r *run) key(route Route, req *providers.Request) string {
	if route.Pool != "" {
		return route.Pool
	}
	p := route.Provider
	return p.Name() + "|" + p.BaseURL() + "|" + req.Model
}

// hopKey is key for route i of the chain, remembered for the latest
// route and model: building a key parses the provider's base URL (to
// leave out its userinfo), and most runs send one model to one route.
func (r *run) hopKey(i int, route Route, req *providers.Request) string {
	if m := r.lastKey.Load(); m != nil && m.route == i && m.model == req.Model && route.Pool == "" {
		return m.key
	}
	k := r.key(route, req)
	r.lastKey.Store(&keyMemo{route: i, model: req.Model, key: k})
	return k
}

// keyMemo is hopKey's latest key.
type keyMemo struct {
	route int
	model string
	key   string
}

// cost is what one attempt reserves, by the key's reservation rule (the
// registry's, until the headers show another: charge.go): the calibrated
// input estimate, and the output cap or the output the key is expected to
// produce.
func (r *run) cost(key string, route Route, req *providers.Request, rawInput int64) limiter.Cost {
	out := route.Admission.OutputCap(req)
	if r.reserveRule(key, route) == providers.ReserveExpected && out > 0 {
		out = r.cfg.Estimator.ExpectedOutput(key, out)
	}
	return limiter.Cost{Requests: 1, Input: r.cfg.Estimator.Calibrate(key, rawInput), Output: out}
}
