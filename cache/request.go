package cache

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/canonjson"
	"github.com/llmrun/llmrun/providers"
)

// Use is how a run uses the cache: the live run reads and writes it, the
// estimate counts what it would answer.
type Use struct {
	Cache Cache
	Mode  Mode
	// SkipSampled leaves out requests that sample (temperature above 0,
	// or absent, or more than one choice): their answers vary by design.
	SkipSampled bool
}

// RequestKey keys req by what it asks: endpoint path, model and body;
// never its custom_id, priority or tags (not in the body), nor the
// provider or base URL it goes to.
func RequestKey(req *providers.Request) Key {
	// The body in canonical JSON (issue 24), as the checkpoint's fingerprint
	// reads it: a generator that re-encodes its lines still hits.
	var c canonjson.Canon
	body, err := c.Append(nil, req.Body)
	if err != nil {
		body = req.Body
	}
	return KeyOf(req.Endpoint.Path(), req.Model, body)
}

// Samples reports whether a request with body has its answer drawn at
// random: a temperature above 0 (absent counts as the providers' default
// of 1) or several choices (n, candidateCount).
func Samples(body []byte) bool {
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

// Takes reports whether the cache takes part for req (nil u: never).
func (u *Use) Takes(req *providers.Request) bool {
	return u != nil && u.Cache != nil && !(u.SkipSampled && Samples(req.Body))
}

// Holds reports whether the cache would answer req (for estimates); a
// cache that fails holds nothing.
func (u *Use) Holds(req *providers.Request) bool {
	if !u.Takes(req) || !u.Mode.Read {
		return false
	}
	_, ok, _ := u.Get(context.Background(), req)
	return ok
}

// Get looks up the answer the cache holds for req (see Lookup).
func (u *Use) Get(ctx context.Context, req *providers.Request) (*Entry, bool, error) {
	return Lookup(ctx, u.Cache, RequestKey(req), req.Endpoint.Path(), req.Model)
}

// Put stores resp, provider's answer to req as model with cost (the
// line's cost_usd: a number, else unknown), under req's key.
func (u *Use) Put(ctx context.Context, req *providers.Request, provider, model string, resp *providers.Response, cost json.RawMessage) error {
	e := &Entry{
		Endpoint: req.Endpoint.Path(), Model: req.Model, Provider: provider, ResponseModel: model,
		Status: resp.Status, RequestID: resp.RequestID, Body: resp.Body,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CacheRead: resp.Usage.CacheReadTokens, CacheWrite: resp.Usage.CacheWriteTokens, Estimated: resp.Usage.Estimated,
		Created: time.Now().UTC(),
	}
	if v, err := strconv.ParseFloat(string(cost), 64); err == nil {
		e.CostUSD = &v
	}
	return u.Cache.Put(ctx, RequestKey(req), e)
}
