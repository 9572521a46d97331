package runner

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/cache"
	"github.com/llmrun/llmrun/internal/canonjson"
	"github.com/llmrun/llmrun/providers"
)

// CacheUse is how a run uses the cross-run answer cache (Config.Cache).
type CacheUse struct {
	Cache cache.Cache
	Mode  cache.Mode
	// SkipSampled leaves out requests that sample (temperature above 0,
	// or absent, or more than one choice): their answers vary by design.
	SkipSampled bool
}

// cacheKeyOf keys req by what it asks: endpoint path, model and body;
// never its custom_id, priority or tags (not in the body), nor the
// provider or base URL it goes to.
func cacheKeyOf(req *providers.Request) cache.Key {
	// The body in canonical JSON (issue 24), as the checkpoint's fingerprint
	// reads it: a generator that re-encodes its lines still hits.
	var c canonjson.Canon
	body, err := c.Append(nil, req.Body)
	if err != nil {
		body = req.Body
	}
	return cache.KeyOf(req.Endpoint.Path(), req.Model, body)
}

// samples reports whether req's answer is drawn at random: a temperature
// above 0 (absent counts as the providers' default of 1) or several
// choices (n, candidateCount).
func samples(body []byte) bool {
	r := gjson.GetManyBytes(body, "temperature", "generationConfig.temperature", "n", "generationConfig.candidateCount")
	t := r[0]
	if !t.Exists() {
		t = r[1]
	}
	if !t.Exists() || t.Float() > 0 {
		return true
	}
	return r[2].Int() > 1 || r[3].Int() > 1
}

// cacheable reports whether the run's cache takes part for req.
func (r *run) cacheable(req *providers.Request) bool {
	c := r.cfg.Cache
	return c != nil && c.Cache != nil && !(c.SkipSampled && samples(req.Body))
}

// holds reports whether the cache would answer req (for estimates); a
// cache that fails holds nothing.
func (c *CacheUse) holds(req *providers.Request) bool {
	if c == nil || c.Cache == nil || !c.Mode.Read || (c.SkipSampled && samples(req.Body)) {
		return false
	}
	_, ok, _ := cache.Lookup(context.Background(), c.Cache, cacheKeyOf(req), req.Endpoint.Path(), req.Model)
	return ok
}

// cacheHit answers h's request from the cache, when it holds an answer for
// it: written as an answer (cached, cost 0), never sent nor reserved.
func (r *run) cacheHit(h *hop) bool {
	if !r.cacheable(h.req) || !r.cfg.Cache.Mode.Read {
		return false
	}
	e, ok, err := cache.Lookup(r.workCtx, r.cfg.Cache.Cache, cacheKeyOf(h.req), h.req.Endpoint.Path(), h.req.Model)
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
		r.c.addSaved(*e.CostUSD)
	}
	model := e.ResponseModel
	if model == "" {
		model = e.Model
	}
	l := Line{
		CustomID: h.t.req.ID,
		Response: &LineResp{StatusCode: e.Status, RequestID: e.RequestID, Body: e.Body},
		Llmrun: LineDetails{
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
	e := &cache.Entry{
		Endpoint: h.req.Endpoint.Path(), Model: h.req.Model, Provider: h.route.Provider.Name(), ResponseModel: model,
		Status: resp.Status, RequestID: resp.RequestID, Body: resp.Body,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CacheRead: resp.Usage.CacheReadTokens, CacheWrite: resp.Usage.CacheWriteTokens, Estimated: resp.Usage.Estimated,
		Created: time.Now().UTC(),
	}
	if v, err := strconv.ParseFloat(string(cost), 64); err == nil {
		e.CostUSD = &v
	}
	if err := r.cfg.Cache.Cache.Put(r.workCtx, cacheKeyOf(h.req), e); err != nil && err != cache.ErrTooLarge {
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

// cacheSaved is the spend the cache's hits saved, kept beside Counters.
type cacheSaved struct {
	mu  sync.Mutex
	usd float64
}

func (c *Counters) addSaved(usd float64) {
	c.saved.mu.Lock()
	c.saved.usd += usd
	c.saved.mu.Unlock()
}

// SavedUSD is what this run's cache hits cost when they were paid for.
func (c *Counters) SavedUSD() float64 {
	c.saved.mu.Lock()
	defer c.saved.mu.Unlock()
	return c.saved.usd
}
