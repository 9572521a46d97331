package runner

import (
	"encoding/json"
	"time"

	"github.com/llmrun/llmrun/cache"
	"github.com/llmrun/llmrun/output"
	"github.com/llmrun/llmrun/providers"
)

// cacheable reports whether the run's cache takes part for req.
func (r *run) cacheable(req *providers.Request) bool { return r.cfg.Cache.Takes(req) }

// cacheHit answers h's request from the cache, when it holds an answer for
// it: written as an answer (cached, cost 0), never sent nor reserved.
func (r *run) cacheHit(h *hop) bool {
	if !r.cacheable(h.req) || !r.cfg.Cache.Mode.Read {
		return false
	}
	e, ok, err := r.cfg.Cache.Get(r.workCtx, h.req)
	if err != nil {
		r.cacheTrouble("reading", err)
		return false
	}
	if !ok {
		r.c.CacheMisses.Add(1)
		return false
	}
	r.c.CacheHits.Add(1)
	if e.CostUSD != nil {
		r.c.AddSaved(*e.CostUSD)
	}
	model := e.ResponseModel
	if model == "" {
		model = e.Model
	}
	l := output.Line{
		CustomID: h.t.req.ID,
		Response: &output.LineResp{StatusCode: e.Status, RequestID: e.RequestID, Body: e.Body},
		Llmrun: output.LineDetails{
			Provider: e.Provider, Model: model, LatencyMS: time.Since(h.t.start).Milliseconds(),
			InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, CacheRead: e.CacheRead, CacheWrite: e.CacheWrite,
			Estimated: e.Estimated, CostUSD: json.RawMessage("0"), Vars: h.t.req.Vars, Cached: true,
		},
	}
	r.send(h.t, &l, true)
	return true
}

// cachePut stores a successful answer as it is sunk.
func (r *run) cachePut(h *hop, resp *providers.Response, model string, cost json.RawMessage) {
	if !r.cacheable(h.req) || !r.cfg.Cache.Mode.Write || resp.Status/100 != 2 {
		return
	}
	if err := r.cfg.Cache.Put(r.workCtx, h.req, h.route.Provider.Name(), model, resp, cost); err != nil && err != cache.ErrTooLarge {
		r.cacheTrouble("writing", err)
		return
	}
	r.c.CachePuts.Add(1)
}

// cacheTrouble logs a cache failure once per run: a cache that fails
// costs money, never answers.
func (r *run) cacheTrouble(doing string, err error) {
	if r.workCtx.Err() != nil {
		return
	}
	r.cacheWarn.Do(func() {
		r.cfg.Log.Warn("cache "+doing+" failed; the run goes on without it for this request", "err", err)
	})
}
