package job

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/forecast"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
	"github.com/llmrun/llmrun/source"
)

// CostOptions are the options about money, shared by batch and estimate.
type CostOptions struct {
	// Prices is a --prices file of overrides and additions.
	Prices string
	// MaxCost caps the spend recorded in the output, in USD (0: none).
	MaxCost float64
	// DryRun estimates instead of running (batch --dry-run, estimate).
	DryRun bool
	// JSON prints the estimate as JSON.
	JSON bool
	// Offline keeps the estimate local: no count_tokens calls.
	Offline bool
}

// loadPrices is the built-in price list with --prices on top.
func loadPrices(o *CostOptions) (*pricing.Table, error) {
	t := pricing.Snapshot()
	if o.Prices == "" {
		return t, nil
	}
	t, err := t.WithPricesFile(o.Prices)
	if err != nil {
		return nil, usage(err)
	}
	return t, nil
}

// checkPriced makes --max-cost a usage error when a model that may be
// sent has no price: the cap could not be kept.
func checkPriced(t *pricing.Table, routes []runner.Route, inputModels map[string]bool) error {
	var missing []string
	for i, rt := range routes {
		models := inputModels
		if i > 0 && rt.Model != "" {
			models = map[string]bool{rt.Model: true}
		}
		for m := range models {
			if _, ok := t.Lookup(rt.Provider.Name(), m); !ok {
				missing = append(missing, fmt.Sprintf("%s (%s)", m, rt.Provider.Name()))
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return usagef("--max-cost needs a price for every model, and %s has none in the price list of %s: give it one with --prices FILE", strings.Join(missing, ", "), t.Date())
}

// droppedCostKey is the checkpoint state in which runs before the
// checkpoint kept its own Dropped recorded the cost of dropped failure
// lines; it is still counted.
const droppedCostKey = "cost.dropped_usd"

// lineCost is the cost a line records, for checkpoint.Options.Tally: the
// cost of lines a compaction drops (superseded answers, failures since
// answered or retried) stays counted.
func lineCost(line []byte) float64 { return gjson.GetBytes(line, "llmrun.cost_usd").Float() }

// legacyDropped is the cost recorded under droppedCostKey.
func legacyDropped(state func(string) (json.RawMessage, bool)) pricing.Cost {
	var usd float64
	if raw, ok := state(droppedCostKey); ok && json.Unmarshal(raw, &usd) == nil {
		return pricing.FromUSD(usd)
	}
	return 0
}

// recordedSpend is the spend recorded in the checkpoint: the cost_usd of
// the output's and the errors file's lines and of the lines compactions
// dropped. The files are read (a pass over each) only when needed, for
// --max-cost.
func recordedSpend(store *checkpoint.Store, output, errorsPath string, needed bool) (pricing.Cost, error) {
	if !needed {
		return 0, nil
	}
	spent := pricing.FromUSD(store.Dropped()) + legacyDropped(store.State)
	for _, p := range []string{output, errorsPath} {
		rec, err := forecast.ReadRecorded(p, false)
		if err != nil {
			return 0, err
		}
		spent += rec.Cost
	}
	return spent, nil
}

// Estimate is batch --dry-run (llmrun estimate): it prints what running
// o.Input would take, sending nothing and needing no key.
func Estimate(io *IO, o BatchOptions) error {
	shard, _, err := o.complete(io.Getenv)
	if err != nil {
		return err
	}
	prices, err := loadPrices(&o.Cost)
	if err != nil {
		return err
	}
	// The input may be a pipe: spooled beside the output, as a run would.
	src := &source.Source{Path: o.Input, Shard: shard, Format: o.Source.format, Stdin: io.In, SpoolDir: filepath.Dir(o.Output)}
	if err := src.Open(); err != nil {
		return err
	}
	defer src.Close()
	provider := o.Provider
	if ep, ok := o.endpoint(provider); ok {
		provider = ep.Provider
		if o.Model == "" {
			o.Model = ep.Model
		}
		if ep.Limits != nil { // the endpoint's own budget, as the run uses it
			o.RPM, o.ITPM, o.OTPM, o.TPM = orFlag(o.RPM, ep.Limits.RPM), orFlag(o.ITPM, ep.Limits.ITPM), orFlag(o.OTPM, ep.Limits.OTPM), orFlag(o.TPM, ep.Limits.TPM)
		}
	}
	shape, err := inputShape(src, &o)
	if err != nil {
		return err
	}
	entry, err := registry.Resolve(provider, shape, io.Getenv)
	if err != nil {
		return usage(err)
	}
	src.Parser = o.parser(entry.Format)
	src.Parser.Models = o.modelRules(io, entry, entry.BaseURL(o.BaseURL, io.Getenv))
	if src.Parser.Defaults.Model == "" && entry.Model != nil {
		src.Parser.Defaults.Model = entry.Model(entry.BaseURL(o.BaseURL, io.Getenv)) // an Azure deployment URL
	}
	if err := o.Models.check(src.Parser.Defaults.Model); err != nil {
		return err
	}
	check, err := src.Check()
	if err != nil {
		return err
	}
	o.checked(io, check)
	rec, err := forecast.ReadRecorded(o.Output, true)
	if err != nil {
		return err
	}
	cu, err := openCache(&o.Cache)
	if err != nil {
		return err
	}
	if cu != nil {
		defer cu.Cache.Close()
	}
	cfg := forecast.EstimateConfig{
		Cache:  cu,
		Source: src, Provider: entry.Name, Admission: entry.Admission,
		Estimator: estimate.NewEstimator(), Prices: prices, Recorded: rec,
		Limits: limiter.Limits{RPM: o.RPM, ITPM: o.ITPM, OTPM: o.OTPM, TPM: o.TPM, Burst: o.Burst, Headroom: o.Headroom},
		Pool:   o.Pool != "",
	}
	est, err := forecast.RunEstimate(cfg)
	if err != nil {
		return err
	}
	if est, err = calibrateEstimate(io, &o, &entry, cfg, est); err != nil {
		return err
	}
	if o.Cost.JSON {
		b, err := json.MarshalIndent(est, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(io.Out, "%s\n", b)
		return err
	}
	printEstimate(io.Out, est, &o, entry.Name)
	return nil
}

// printEstimate writes the estimate as a table.
func printEstimate(w io.Writer, e *forecast.Estimate, o *BatchOptions, provider string) {
	fmt.Fprintf(w, "llmrun estimate: %s to send to %s", plural(e.Requests, "request"), provider)
	if e.AlreadyDone > 0 {
		fmt.Fprintf(w, " (%d already in %s)", e.AlreadyDone, o.Output)
	}
	if e.CacheHits > 0 {
		fmt.Fprintf(w, " (%d more answered free from the cache)", e.CacheHits)
	}
	fmt.Fprintf(w, "; prices of %s\n\n", e.PricesDate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\trequests\tinput tokens\toutput ≤\toutput ~\tlive ≤\tlive ~\tbatch ≤\tbatch ~\t")
	row := func(name string, req, in int64, approx bool, omax int64, oexp *int64, cmax, cexp, bmax, bexp *float64) {
		tilde := ""
		if approx {
			tilde = "~"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", name, req, tilde, in, omax, intOr(oexp), money(cmax), money(cexp), money(bmax), money(bexp))
	}
	for _, m := range e.Models {
		row(m.Model, m.Requests, m.InputTokens, m.InputApproximate, m.OutputTokensMax, m.OutputTokensExpected, m.CostUSDMax, m.CostUSDExpected, m.BatchCostUSDMax, m.BatchCostUSDExpected)
	}
	if len(e.Models) > 1 {
		row("total", e.Requests, e.InputTokens, e.InputApproximate, e.OutputTokensMax, e.OutputTokensExpected, e.CostUSDMax, e.CostUSDExpected, e.BatchCostUSDMax, e.BatchCostUSDExpected)
	}
	tw.Flush()
	fmt.Fprintln(w)
	printCalibration(w, e, provider)
	if e.InputApproximate {
		fmt.Fprintln(w, "~ input counted as bytes/4 (no tokenizer for the model): tens of percent off, more for text with accents or CJK; with an Anthropic or Gemini key (and without --offline) the provider counts a sample instead.")
	}
	if e.OutputTokensExpected == nil {
		fmt.Fprintln(w, "output ~ and the expected costs need answers in the output; until then output ≤ (the sum of max tokens) is the bound.")
	}
	if unpriced := unpricedHints(w, e, o, provider); len(unpriced) > 0 {
		fmt.Fprintf(w, "no price for %s: its cost is unknown (give it one with --prices FILE).\n", strings.Join(unpriced, ", "))
	}
	printLabelWarnings(w, e, o, provider)
	if e.CostUSDMax != nil && e.BatchCostUSDMax != nil && *e.CostUSDMax > 0 {
		fmt.Fprintf(w, "the batch API (--mode batch) would save %s at most, results within 24h.\n",
			pricing.FromUSD(*e.CostUSDMax-*e.BatchCostUSDMax))
	}
	if e.WallSeconds == nil {
		fmt.Fprintln(w, "wall time: unknown without limits (give --rpm, --itpm, --otpm or --tpm).")
	} else {
		fmt.Fprintf(w, "wall time: about %s on the live API, bound by %s (%s); more if few requests are in flight.\n",
			secs(*e.WallSeconds), e.BoundBy, limitsString(o))
	}
}

func intOr(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func money(p *float64) string {
	if p == nil {
		return "-"
	}
	return pricing.FromUSD(*p).String()
}

func secs(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.1fs", s)
	case s < 7200:
		return fmt.Sprintf("%.1f min", s/60)
	}
	return fmt.Sprintf("%.1f h", s/3600)
}

func limitsString(o *BatchOptions) string {
	return strings.Join(rateWords("--", o.RPM, o.ITPM, o.OTPM, o.TPM), ", ")
}

// batchSaving says, for --mode auto, what the batch route saves on the
// pending requests at most: a quick pass counting input as bytes/4.
func (b *batch) batchSaving() string {
	o := b.o
	if o.Offline.Mode != ModeAuto || b.prices == nil {
		return ""
	}
	rec, err := forecast.ReadRecorded(o.Output, true)
	if err != nil {
		return ""
	}
	est, err := forecast.RunEstimate(forecast.EstimateConfig{Source: b.src, Provider: b.primary.Name, Admission: b.primary.Admission,
		Estimator: estimate.NewEstimator(), Prices: b.prices, Recorded: rec, Fast: true})
	if err != nil || est.CostUSDMax == nil || est.BatchCostUSDMax == nil {
		return ""
	}
	return fmt.Sprintf(" (the batch API costs at most %v instead of %v live: it saves %v)",
		pricing.FromUSD(*est.BatchCostUSDMax), pricing.FromUSD(*est.CostUSDMax), pricing.FromUSD(*est.CostUSDMax-*est.BatchCostUSDMax))
}
