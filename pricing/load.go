package pricing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// snapshotMeta is the "_snapshot" header pricing/gen writes.
type snapshotMeta struct {
	Date   string `json:"date"`
	Source string `json:"source"`
}

// Field names. An entry may give each rate in LiteLLM's form (dollars per
// token) or the simpler one (dollars per million tokens), not both.
var (
	perToken = map[string]string{
		"input_cost_per_token":            "input",
		"output_cost_per_token":           "output",
		"cache_read_input_token_cost":     "cache_read",
		"cache_creation_input_token_cost": "cache_write",
		"input_cost_per_token_batches":    "batch_input",
		"output_cost_per_token_batches":   "batch_output",
	}
	perMtok = map[string]string{
		"input_per_mtok":        "input",
		"output_per_mtok":       "output",
		"cache_read_per_mtok":   "cache_read",
		"cache_write_per_mtok":  "cache_write",
		"batch_input_per_mtok":  "batch_input",
		"batch_output_per_mtok": "batch_output",
	}
	// tierField is LiteLLM's long-context rate: FIELD_above_Nk_tokens;
	// compiled on first use, as entries are parsed only when looked up.
	tierField = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)_above_(\d+)k_tokens$`)
	})
)

// WithPricesFile returns t with the entries of the --prices file at path on
// top; see WithPrices.
func (t *Table) WithPricesFile(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--prices: %w", err)
	}
	defer f.Close()
	return t.WithPrices(f, path)
}

// WithPrices returns t with the entries read from r (named name in errors)
// on top: an entry replaces, for lookups, any snapshot entry of the same
// name. r holds one JSON object whose keys are model names, as Lookup tries
// them ("my-model", "azure/my-deployment"), and whose values are either
// LiteLLM's shape (dollars per token) or the simpler one (dollars per million
// tokens):
//
//	{"gpt-4o-mini": {"input_cost_per_token": 1.5e-7, "output_cost_per_token": 6e-7, "litellm_provider": "openai"},
//	 "my-llama":    {"input_per_mtok": 0.2, "output_per_mtok": 0.6, "cache_read_per_mtok": 0.05,
//	                 "batch_input_per_mtok": 0.1, "batch_output_per_mtok": 0.3}}
//
// An entry needs an input price (and an output price unless it is an
// embedding model, "mode": "embedding"). "provider" (or "litellm_provider")
// chooses the documented batch discount when no batch price is given; an
// entry with neither has no batch price. Unknown fields are ignored, so a
// whole LiteLLM file works. Errors name the file and line.
func (t *Table) WithPrices(r io.Reader, name string) (*Table, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	models, _, err := parse(data, name, true)
	if err != nil {
		return nil, err
	}
	n := *t
	n.last = &lastLookup{}
	n.overrides = make(map[string]*Price, len(t.overrides)+len(models))
	for k, v := range t.overrides {
		n.overrides[k] = v
	}
	for k, v := range models {
		n.overrides[k] = v
	}
	return &n, nil
}

// parse reads a price list. strict (a --prices file) turns entries it
// cannot use into errors; the snapshot skips them.
func parse(data []byte, name string, strict bool) (map[string]*Price, snapshotMeta, error) {
	var meta snapshotMeta
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lines := newLineIndex(data)
	fail := func(off int64, format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lines.line(off), fmt.Sprintf(format, a...))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, meta, fail(dec.InputOffset(), "want a JSON object of model names to prices")
	}
	models := make(map[string]*Price)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, meta, fail(dec.InputOffset(), "%v", err)
		}
		key := tok.(string) // object keys are strings
		off := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, meta, fail(off, "%q: %v", key, err)
		}
		switch {
		case key == "_snapshot":
			if err := json.Unmarshal(raw, &meta); err != nil {
				return nil, meta, fail(off, "_snapshot: %v", err)
			}
			continue
		case key == "sample_spec" || strings.HasPrefix(key, "_"):
			continue
		}
		p, err := entry(key, raw)
		if err != nil {
			if strict {
				return nil, meta, fail(off, "%q: %v", key, err)
			}
			continue
		}
		p.Override = strict
		lk := strings.ToLower(key)
		if _, dup := models[lk]; dup && strict {
			return nil, meta, fail(off, "%q: listed twice", key)
		}
		models[lk] = p
	}
	if _, err := dec.Token(); err != nil {
		return nil, meta, fail(dec.InputOffset(), "%v", err)
	}
	if strict && len(models) == 0 {
		return nil, meta, fmt.Errorf("%s: no model prices", name)
	}
	return models, meta, nil
}

// entry turns one list entry into a Price. Its checks run in a fixed order
// (fields in name order, then input, output, batch) so a bad entry always
// gets the same error.
func entry(model string, raw json.RawMessage) (*Price, error) {
	var fields map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&fields); err != nil || fields == nil {
		return nil, fmt.Errorf("want an object of prices")
	}
	str := func(k string) string { s, _ := fields[k].(string); return s }
	p := &Price{Model: strings.ToLower(model), Source: str("source")}
	p.Provider = str("provider")
	if p.Provider == "" {
		p.Provider = str("litellm_provider")
	}
	got, tiers, err := entryRates(fields)
	if err != nil {
		return nil, err
	}
	in, ok := got["input"]
	if !ok {
		return nil, fmt.Errorf("no input price (input_cost_per_token or input_per_mtok)")
	}
	out, hasOut := got["output"]
	if !hasOut && str("mode") != "embedding" {
		return nil, fmt.Errorf("no output price (output_cost_per_token or output_per_mtok); an embedding model says \"mode\": \"embedding\"")
	}
	p.Sync = overlayRates(got, Rates{Input: in, Output: out, CacheRead: in, CacheWrite: in})
	if err := p.setBatch(got, hasOut); err != nil {
		return nil, err
	}
	p.setTiers(tiers)
	return p, nil
}

// entryRates reads an entry's price fields into slots ("input",
// "cache_read", …) and its long-context tiers by their threshold in tokens.
// Other fields are ignored, so a whole LiteLLM file reads. Keys are visited
// in sorted order so that errors are deterministic.
func entryRates(fields map[string]any) (got map[string]Rate, tiers map[int64]map[string]Rate, err error) {
	got = map[string]Rate{}
	tiers = map[int64]map[string]Rate{}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fields[k]
		var slot string
		var scale float64
		if s, ok := perToken[k]; ok {
			slot, scale = s, 1
		} else if s, ok := perMtok[k]; ok {
			slot, scale = s, 1e6
		} else if m := tierField().FindStringSubmatch(k); m != nil {
			above, _ := strconv.ParseInt(m[2], 10, 64)
			r, err := parseRate(k, v, 1)
			if err != nil {
				return nil, nil, err
			}
			if tiers[above*1000] == nil {
				tiers[above*1000] = map[string]Rate{}
			}
			tiers[above*1000][perToken[m[1]]] = r
			continue
		} else {
			continue
		}
		if _, dup := got[slot]; dup {
			return nil, nil, fmt.Errorf("%s: the %s price is given twice (per token and per million tokens)", k, strings.ReplaceAll(slot, "_", " "))
		}
		r, err := parseRate(k, v, scale)
		if err != nil {
			return nil, nil, err
		}
		got[slot] = r
	}
	return got, tiers, nil
}

// parseRate reads field k's price v, in dollars per (token × scale), as
// picodollars per token: integers, so costs add up exactly.
func parseRate(k string, v any, scale float64) (Rate, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: want a number", k)
	}
	f, err := n.Float64()
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s: want a price of 0 or more, have %s", k, n)
	}
	return Rate(math.Round(f * perUSD / scale)), nil
}

// overlayRates lays the listed rates g over base: a base lists none for the
// cache (they default to the input rate), a tier keeps the base's cache
// rates where it lists none of its own.
func overlayRates(g map[string]Rate, base Rates) Rates {
	r := base
	if v, ok := g["input"]; ok {
		r.Input = v
	}
	if v, ok := g["output"]; ok {
		r.Output = v
	}
	if v, ok := g["cache_read"]; ok {
		r.CacheRead = v
	}
	if v, ok := g["cache_write"]; ok {
		r.CacheWrite = v
	}
	return r
}

// setBatch sets p's batch rates: the listed ones (with the provider's rule
// for cache hits, which lists rarely give), else the provider's documented
// discount, else none. Half a listed batch price is an error, not a guess.
func (p *Price) setBatch(got map[string]Rate, hasOut bool) error {
	if bi, ok := got["batch_input"]; ok {
		bo, ok := got["batch_output"]
		if !ok && hasOut {
			return fmt.Errorf("a batch input price without a batch output price")
		}
		b := Rates{Input: bi, Output: bo, CacheRead: p.Sync.CacheRead, CacheWrite: p.Sync.CacheWrite}
		if rule, _, ok := batchRule(p.Provider, p.Sync); ok {
			b.CacheRead, b.CacheWrite = rule.CacheRead, rule.CacheWrite
		}
		p.Batch, p.BatchRule = &b, "listed batch price"
	} else if _, ok := got["batch_output"]; ok {
		return fmt.Errorf("a batch output price without a batch input price")
	} else if b, why, ok := batchRule(p.Provider, p.Sync); ok {
		p.Batch, p.BatchRule = &b, why
	}
	return nil
}

// setTiers appends p's long-context tiers in ascending order of threshold,
// each with batch rates by the provider's rule or, failing one, scaled as
// p's listed batch price scales its base.
func (p *Price) setTiers(tiers map[int64]map[string]Rate) {
	aboves := make([]int64, 0, len(tiers))
	for a := range tiers {
		aboves = append(aboves, a)
	}
	sort.Slice(aboves, func(i, j int) bool { return aboves[i] < aboves[j] })
	for _, a := range aboves {
		t := Tier{Above: a, Sync: overlayRates(tiers[a], p.Sync)}
		if b, _, ok := batchRule(p.Provider, t.Sync); ok {
			t.Batch = &b
		} else if p.Batch != nil && p.Sync.Input > 0 {
			f := float64(p.Batch.Input) / float64(p.Sync.Input)
			s := func(r Rate) Rate { return Rate(math.Round(float64(r) * f)) }
			b := Rates{Input: s(t.Sync.Input), Output: s(t.Sync.Output), CacheRead: s(t.Sync.CacheRead), CacheWrite: s(t.Sync.CacheWrite)}
			t.Batch = &b
		}
		p.Tiers = append(p.Tiers, t)
	}
}

// lineIndex maps byte offsets to 1-based line numbers.
type lineIndex []int

func newLineIndex(data []byte) lineIndex {
	var idx lineIndex
	for i, c := range data {
		if c == '\n' {
			idx = append(idx, i)
		}
	}
	return idx
}

func (l lineIndex) line(off int64) int {
	return sort.SearchInts(l, int(off)) + 1
}
