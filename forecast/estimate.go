package forecast

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/cache"
	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/source"
)

// Recorded is what an output (or errors) file says about the requests
// already answered: their ids, what they cost and how long their answers
// were.
type Recorded struct {
	Done map[string]struct{}
	// Cost sums the lines' llmrun.cost_usd; Unpriced counts lines whose
	// cost_usd is null.
	Cost     pricing.Cost
	Unpriced int
	// Output is the answers' output tokens by model.
	Output map[string]OutputSeen
}

// OutputSeen is the output tokens of a model's answers.
type OutputSeen struct{ Answers, Tokens int64 }

// ReadRecorded reads an output or errors file without locking or changing
// it. A missing file records nothing; lines that do not parse (a torn last
// line) are skipped. It keeps the ids only with keepIDs.
func ReadRecorded(path string, keepIDs bool) (*Recorded, error) {
	rec := &Recorded{Done: map[string]struct{}{}, Output: map[string]OutputSeen{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && gjson.ValidBytes(line) {
			res := gjson.GetManyBytes(line, "custom_id", "llmrun.cost_usd", "llmrun.model", "llmrun.output_tokens", "error")
			if keepIDs && res[0].Exists() {
				rec.Done[res[0].String()] = struct{}{}
			}
			switch c := res[1]; c.Type {
			case gjson.Number:
				rec.Cost += pricing.FromUSD(c.Float())
			case gjson.Null:
				if c.Exists() {
					rec.Unpriced++
				}
			}
			if m := res[2].String(); m != "" && res[4].Type == gjson.Null {
				o := rec.Output[m]
				o.Answers++
				o.Tokens += res[3].Int()
				rec.Output[m] = o
			}
		}
		if err == io.EOF {
			return rec, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}

// EstimateConfig is what Estimate needs: the requests and how they will be
// sent, priced and metered. Nothing is sent.
type EstimateConfig struct {
	Source *source.Source
	// Provider is the registry name of the primary route, for prices.
	Provider  string
	Admission providers.Admission
	Estimator *estimate.Estimator
	Prices    *pricing.Table
	// Recorded is the output so far: its requests are not estimated, and
	// its answers' lengths give the expected output.
	Recorded *Recorded
	// Limits are the limits given; none given leaves the wall time
	// unknown. Pool puts every model under one budget (--pool).
	Limits limiter.Limits
	Pool   bool
	// Fast counts input as bytes/4 without tokenizing (approximate).
	Fast bool
	// Cache, if set, answers some requests for free: they are counted
	// in CacheHits, not estimated.
	Cache *cache.Use
	// Calibration scales the local input count of the models it holds
	// (from Calibrate: the provider's own count of a sample).
	Calibration map[string]*ModelCalibration
}

// Estimate is what a run of the pending requests would take: tokens, money
// on the live and the batch route, and time under the limits given.
type Estimate struct {
	// Requests counts the requests still to send; AlreadyDone those the
	// output already answers.
	Requests    int64 `json:"requests"`
	AlreadyDone int64 `json:"already_done"`
	// CacheHits counts the requests the --cache answers: free.
	CacheHits int64 `json:"cache_hits,omitempty"`
	Amounts
	// WallSeconds is the time the binding limit implies for the live
	// route (null when no limits are given); BoundBy names that limit.
	WallSeconds *float64 `json:"wall_seconds"`
	BoundBy     string   `json:"bound_by,omitempty"`
	PricesDate  string   `json:"prices_date"`
	Unpriced    []string `json:"unpriced_models,omitempty"`

	Models []ModelEstimate `json:"models"`
}

// Amounts are the tokens and money an Estimate counts, for all the
// requests and for each model's: one type, so the total and its parts
// name, print and sum the same members.
type Amounts struct {
	InputTokens int64 `json:"input_tokens"`
	// InputApproximate: some model has no known tokenizer, so its input
	// is counted as bytes/4.
	InputApproximate bool `json:"input_tokens_approximate"`
	// OutputTokensMax sums the requests' max tokens; OutputTokensExpected
	// scales the mean answer of each model already in the output, null
	// when a model has none (the max is then the only bound).
	OutputTokensMax      int64  `json:"output_tokens_max"`
	OutputTokensExpected *int64 `json:"output_tokens_expected"`
	// Costs in USD, null when some model has no price (see Unpriced) or,
	// for the expected ones, no expected output.
	CostUSDMax           *float64 `json:"cost_usd_max"`
	CostUSDExpected      *float64 `json:"cost_usd_expected"`
	BatchCostUSDMax      *float64 `json:"batch_cost_usd_max"`
	BatchCostUSDExpected *float64 `json:"batch_cost_usd_expected"`
}

// ModelEstimate is one model's part of an Estimate.
type ModelEstimate struct {
	Model    string `json:"model"`
	Requests int64  `json:"requests"`
	Amounts
	// PricedAs is the price list's name for the model ("" if unpriced).
	PricedAs string `json:"priced_as,omitempty"`
	// PricedProvider is the provider the price list has that price under.
	PricedProvider string `json:"priced_provider,omitempty"`
	// Calibration, when set, says InputTokens is the local count scaled
	// by the provider's own count of a sample (Calibrate).
	Calibration *ModelCalibration `json:"calibration,omitempty"`

	// p is the model's price (nil: unpriced); meanOut the mean answer
	// seen, -1 when none; the costs are kept exact for the totals.
	p                    *pricing.Price
	meanOut              int64
	localIn              int64 // the local input count, before Calibration
	max, exp, bmax, bexp pricing.Cost
	priced, batchPriced  bool
}

// RunEstimate reads the source once and estimates the pending requests.
// Each request is priced on its own (so a long-context tier applies only
// to the requests that cross it): at most is every input token uncached
// and max tokens out; expected is the mean answer of the model in the
// output so far, capped at the request's max tokens.
func RunEstimate(cfg EstimateConfig) (*Estimate, error) {
	est := &Estimate{}
	if cfg.Prices != nil {
		est.PricesDate = cfg.Prices.Date()
	}
	byModel, err := est.read(cfg)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(byModel))
	for n := range byModel {
		names = append(names, n)
	}
	sort.Strings(names)
	var cmax, cexp, bmax, bexp pricing.Cost
	allPriced, allBatch, allExpected := true, true, true
	var outExp int64
	for _, n := range names {
		m := byModel[n]
		if c := cfg.Calibration[n]; c != nil {
			m.Calibration, m.InputApproximate = c.finish(m.localIn), false
		}
		est.Requests += m.Requests
		est.InputTokens += m.InputTokens
		est.OutputTokensMax += m.OutputTokensMax
		est.InputApproximate = est.InputApproximate || m.InputApproximate
		if m.OutputTokensExpected != nil {
			outExp += *m.OutputTokensExpected
		} else {
			allExpected = false
		}
		m.CostUSDMax = m.max.USDOrNull(m.priced)
		m.BatchCostUSDMax = m.bmax.USDOrNull(m.batchPriced)
		m.CostUSDExpected = m.exp.USDOrNull(m.priced && m.OutputTokensExpected != nil)
		m.BatchCostUSDExpected = m.bexp.USDOrNull(m.batchPriced && m.OutputTokensExpected != nil)
		allPriced = allPriced && m.priced
		allBatch = allBatch && m.batchPriced
		if !m.priced {
			est.Unpriced = append(est.Unpriced, n)
		}
		cmax, bmax, cexp, bexp = cmax+m.max, bmax+m.bmax, cexp+m.exp, bexp+m.bexp
		est.Models = append(est.Models, *m)
	}
	if allExpected && len(names) > 0 {
		est.OutputTokensExpected = &outExp
	}
	est.CostUSDMax = cmax.USDOrNull(allPriced)
	est.BatchCostUSDMax = bmax.USDOrNull(allPriced && allBatch)
	est.CostUSDExpected = cexp.USDOrNull(allPriced && allExpected)
	est.BatchCostUSDExpected = bexp.USDOrNull(allPriced && allBatch && allExpected)
	est.wall(cfg)
	return est, nil
}

// read counts the input's requests by model: those already answered and
// those the cache holds apart, each other's tokens estimated.
func (est *Estimate) read(cfg EstimateConfig) (map[string]*ModelEstimate, error) {
	byModel := map[string]*ModelEstimate{}
	err := cfg.Source.Each(func(req *providers.Request) error {
		if cfg.Recorded != nil {
			if _, done := cfg.Recorded.Done[req.ID]; done {
				est.AlreadyDone++
				return nil
			}
		}
		if cfg.Cache.Holds(req) {
			est.CacheHits++
			return nil
		}
		m := byModel[req.Model]
		if m == nil {
			m = newModelEstimate(cfg, req.Model)
			byModel[req.Model] = m
		}
		text := cfg.Admission.PromptText(req)
		in := estimate.ByBytes(len(text))
		if !cfg.Fast {
			in = cfg.Estimator.RawInputTokens(req.Model, text)
		}
		if c := cfg.Calibration[req.Model]; c != nil {
			m.localIn += in
			in = int64(math.Round(float64(in) * c.Ratio))
		}
		m.add(in, cfg.Admission.OutputCap(req))
		return nil
	})
	return byModel, err
}

func newModelEstimate(cfg EstimateConfig, model string) *ModelEstimate {
	m := &ModelEstimate{Model: model, meanOut: -1}
	m.InputApproximate = cfg.Fast || !cfg.Estimator.HasTokenizer(model)
	if cfg.Prices != nil {
		if p, ok := cfg.Prices.Lookup(cfg.Provider, model); ok {
			m.p, m.priced, m.PricedAs, m.PricedProvider = &p, true, p.Model, p.Provider
			m.batchPriced = p.Batch != nil
		}
	}
	if cfg.Recorded != nil {
		if seen, ok := cfg.Recorded.Output[model]; ok && seen.Answers > 0 {
			m.meanOut = (seen.Tokens + seen.Answers - 1) / seen.Answers
			zero := int64(0)
			m.OutputTokensExpected = &zero
		}
	}
	return m
}

// add counts and prices one request.
func (m *ModelEstimate) add(input, maxOut int64) {
	m.Requests++
	m.InputTokens += input
	m.OutputTokensMax += maxOut
	exp := min(m.meanOut, maxOut)
	if m.OutputTokensExpected != nil {
		*m.OutputTokensExpected += exp
	}
	if m.p == nil {
		return
	}
	cost := func(out int64, batch bool) pricing.Cost {
		c, _ := m.p.Cost(pricing.Usage{InputTokens: input, OutputTokens: out}, batch)
		return c
	}
	m.max += cost(maxOut, false)
	m.bmax += cost(maxOut, true)
	if m.OutputTokensExpected != nil {
		m.exp += cost(exp, false)
		m.bexp += cost(exp, true)
	}
}

// wall is the time the limits imply for the live route: each budget key
// (a model, or the pool) starts with full buckets (Burst of refill) and
// then refills at rate/60 per second, so a dimension needing total takes
// (total − capacity) / (rate/60); the keys run side by side, so the run
// takes as long as its slowest key, bound by that key's slowest dimension.
// Output counts at most (max tokens) unless the provider meters generated
// tokens and answers of the model are known. Latency and --concurrency are
// not modelled: with few requests in flight a run can take longer.
func (e *Estimate) wall(cfg EstimateConfig) {
	lim := cfg.Limits
	if lim.RPM <= 0 && lim.ITPM <= 0 && lim.OTPM <= 0 && lim.TPM <= 0 {
		return
	}
	head := lim.Headroom
	if head <= 0 {
		head = 1
	}
	burst := lim.Burst.Seconds()
	if burst <= 0 {
		burst = 1
	}
	type need struct{ req, in, out, tot float64 }
	keys := map[string]*need{}
	for _, m := range e.Models {
		k := m.Model
		if cfg.Pool {
			k = ""
		}
		n := keys[k]
		if n == nil {
			n = &need{}
			keys[k] = n
		}
		out := m.OutputTokensMax
		if cfg.Admission.Output == providers.ReserveExpected && m.OutputTokensExpected != nil {
			out = *m.OutputTokensExpected
		}
		n.req += float64(m.Requests)
		n.in += float64(m.InputTokens)
		n.out += float64(out)
		n.tot += float64(m.InputTokens + m.OutputTokensMax)
	}
	var worst float64
	bound := ""
	for _, n := range keys {
		for _, d := range []struct {
			name        string
			rate, total float64
		}{
			{limiter.DimRequests.String(), lim.RPM, n.req},
			{limiter.DimInput.String(), lim.ITPM, n.in},
			{limiter.DimOutput.String(), lim.OTPM, n.out},
			{limiter.DimTokens.String(), lim.TPM, n.tot},
		} {
			if d.rate <= 0 {
				continue
			}
			perSec := d.rate * head / 60
			t := max(d.total-perSec*burst, 0) / perSec
			if t > worst || bound == "" {
				worst, bound = max(t, worst), d.name
			}
		}
	}
	worst = math.Round(worst*1000) / 1000
	e.WallSeconds, e.BoundBy = &worst, bound
}
