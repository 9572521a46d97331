// Package pricing knows what LLM tokens cost: an embedded, dated snapshot of
// per-model prices (input, output, cache read, cache write, batch) for the
// providers llmrun speaks, user overrides on top (--prices), and the cost of
// one response's usage.
//
// Money is an integer count of picodollars (Cost), not a float: every price
// in the list is a whole number of picodollars per token (a multiple of
// $0.000001 per million tokens), so per-request costs are exact and totals do
// not depend on the order they are added in — the sum of the cost_usd of an
// output's lines is the summary's total, to the picodollar. Rates that are
// not whole picodollars (a --prices file may say anything) are rounded to
// the nearest one when loaded. An int64 holds $9.2 million.
//
// A model with no price is "unknown" (Lookup's false), never a guessed
// number. The package does no I/O beyond the reader it is given and imports
// no other llmrun package.
package pricing

//go:generate go run ./gen -o snapshot.json

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
)

//go:embed snapshot.json
var snapshotJSON string

// Cost is an amount of money in picodollars (1e-12 USD).
type Cost int64

// Picodollars per dollar.
const perUSD = 1e12

// USD returns c in dollars.
func (c Cost) USD() float64 { return float64(c) / perUSD }

// FromUSD converts dollars to a Cost, rounding to the nearest picodollar.
func FromUSD(usd float64) Cost { return Cost(math.Round(usd * perUSD)) }

// String formats c as dollars: cents for amounts of $100 and more, else
// four significant figures at least ("$0.0001234"), so small per-request
// costs stay readable.
func (c Cost) String() string {
	usd := c.USD()
	sign := ""
	if usd < 0 {
		sign, usd = "-", -usd
	}
	switch {
	case usd == 0:
		return "$0"
	case usd >= 100:
		return sign + "$" + strconv.FormatFloat(usd, 'f', 2, 64)
	case usd >= 0.01:
		return sign + "$" + strconv.FormatFloat(usd, 'f', 4, 64)
	}
	// Enough decimals for four significant figures.
	dec := 4 - int(math.Floor(math.Log10(usd))) - 1
	return sign + "$" + strings.TrimRight(strings.TrimRight(strconv.FormatFloat(usd, 'f', dec, 64), "0"), ".")
}

// Rate is a price per token, in picodollars.
type Rate int64

// Rates are one route's per-token prices.
type Rates struct {
	// Input is the price of an uncached input token.
	Input Rate
	// Output is the price of an output token (reasoning included).
	Output Rate
	// CacheRead is the price of an input token served from the prompt
	// cache. Where the list has no cache-read price it is Input: no
	// discount is known, so none is assumed.
	CacheRead Rate
	// CacheWrite is the price of an input token written to the prompt
	// cache (Anthropic's 5-minute writes; 1-hour writes cost more and are
	// not told apart in usage). Without a listed price it is Input.
	CacheWrite Rate
}

// Tier is a long-context price: when a request's input (cached tokens
// included) exceeds Above tokens, the whole request is priced at Sync (and
// Batch), as the providers bill it.
type Tier struct {
	Above int64
	Sync  Rates
	// Batch is nil when the model has no known batch price.
	Batch *Rates
}

// Price is one model's prices.
type Price struct {
	// Model is the name the price was found under (e.g. "claude-sonnet-4-5"
	// for "claude-sonnet-4-5-20250929", "azure/gpt-4o" for azure's gpt-4o).
	Model string
	// Provider is the list's provider name ("openai", "anthropic", "azure",
	// "gemini"), "" when a --prices entry says none.
	Provider string
	// Sync are the prices of the live API.
	Sync Rates
	// Batch are the prices through the provider's batch API: the list's
	// own batch prices where it has them, else half of Sync where the
	// provider documents a 50% batch discount (see BatchRule); nil when
	// neither is known, so a batch cost is unknown.
	Batch *Rates
	// BatchRule says where Batch comes from, for people: "listed",
	// "openai: 50% …", or "" when Batch is nil.
	BatchRule string
	// Tiers are long-context prices, by ascending Above.
	Tiers []Tier
	// Source is the list entry's source (a pricing page URL), if any.
	Source string
	// Override reports that the price came from a --prices file.
	Override bool
}

// Usage is one response's token counts, as a provider reports them.
// InputTokens counts every input token, cached ones included; CacheRead and
// CacheWrite are parts of it.
type Usage struct {
	InputTokens      int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	OutputTokens     int64
}

// rates returns the rates that apply to a request with input tokens in
// total, on the sync or batch route; ok is false when the route's price is
// unknown.
func (p *Price) rates(input int64, batch bool) (Rates, bool) {
	r, b := p.Sync, p.Batch
	for _, t := range p.Tiers {
		if input > t.Above {
			r, b = t.Sync, t.Batch
		}
	}
	if !batch {
		return r, true
	}
	if b == nil {
		return Rates{}, false
	}
	return *b, true
}

// Cost returns what u costs on the sync or (batch true) batch route: the
// uncached input, cache reads, cache writes and output each at its own rate.
// ok is false when the batch route's price is unknown; the sync price of a
// found model is always known.
func (p *Price) Cost(u Usage, batch bool) (c Cost, ok bool) {
	r, ok := p.rates(u.InputTokens, batch)
	if !ok {
		return 0, false
	}
	uncached := max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	return Cost(uncached*int64(r.Input) +
		max(u.CacheReadTokens, 0)*int64(r.CacheRead) +
		max(u.CacheWriteTokens, 0)*int64(r.CacheWrite) +
		max(u.OutputTokens, 0)*int64(r.Output)), true
}

// MaxCost returns the most a request of input tokens can cost with
// maxOutput output tokens: every input token at the dearest input rate
// (a cache write can cost more than an uncached token), the long-context
// tier included. It is what a spend cap reserves before an attempt.
func (p *Price) MaxCost(input, maxOutput int64, batch bool) (Cost, bool) {
	r, ok := p.rates(input, batch)
	if !ok {
		return 0, false
	}
	in := max(r.Input, r.CacheRead, r.CacheWrite)
	return Cost(max(input, 0)*int64(in) + max(maxOutput, 0)*int64(r.Output)), true
}

// Table is a set of prices: the snapshot plus any overrides. It is
// immutable once built and safe for concurrent use.
type Table struct {
	models    map[string]*lazyPrice // lower-case name → the snapshot's entry
	overrides map[string]*Price     // from --prices; looked up first
	date      string
	source    string
	last      *lastLookup // the answer to the latest Lookup
}

// lazyPrice is one snapshot entry, parsed on its first lookup: a run prices
// a model or two of the list's hundreds, and parsing all of them was a
// tenth of a short run's CPU.
type lazyPrice struct {
	once      sync.Once
	name, raw string
	p         *Price // nil: the entry is unusable and skipped, as parse skips it
}

func (l *lazyPrice) price() *Price {
	l.once.Do(func() {
		if p, err := entry(l.name, json.RawMessage(l.raw)); err == nil {
			l.p = p
		}
	})
	return l.p
}

// lastLookup keeps the latest Lookup's answer: a run asks for the same
// model's price with every answer, and finding it again allocated the
// names tried.
type lastLookup struct{ p atomic.Pointer[lookedUp] }

type lookedUp struct {
	provider, model string
	price           Price
	ok              bool
}

var snapshot = sync.OnceValues(func() (*Table, error) { return indexSnapshot(snapshotJSON) })

// indexSnapshot finds the entries of the snapshot's list, parsing none
// (TestSnapshotSane parses them all).
func indexSnapshot(data string) (*Table, error) {
	root := gjson.Parse(data) // a string: the index's keys and entries point into the binary's copy
	if !root.IsObject() {
		return nil, fmt.Errorf("snapshot.json: want a JSON object of model names to prices")
	}
	t := &Table{last: &lastLookup{}}
	entries := make([]lazyPrice, 0, 1024) // one allocation for all; not copied once used
	root.ForEach(func(k, v gjson.Result) bool {
		switch key := k.String(); {
		case key == "_snapshot":
			t.date, t.source = v.Get("date").String(), v.Get("source").String()
		case key == "sample_spec" || strings.HasPrefix(key, "_"):
		default:
			entries = append(entries, lazyPrice{name: key, raw: v.Raw})
		}
		return true
	})
	t.models = make(map[string]*lazyPrice, len(entries))
	for i := range entries {
		t.models[strings.ToLower(entries[i].name)] = &entries[i]
	}
	return t, nil
}

// Snapshot returns the embedded price list. It panics if the embedded file
// is broken, which a test rules out.
func Snapshot() *Table {
	t, err := snapshot()
	if err != nil {
		panic(err)
	}
	return t
}

// Date is the snapshot's date (YYYY-MM-DD), to show wherever costs are shown.
func (t *Table) Date() string { return t.date }

// Source says where the snapshot's prices come from.
func (t *Table) Source() string { return t.source }

// HasOverrides reports whether a --prices file was added.
func (t *Table) HasOverrides() bool { return len(t.overrides) > 0 }

// Lookup finds the price of model on provider ("openai", "anthropic",
// "azure", "gemini"; "" or another name for none). It tries, in order, the
// --prices entries then the snapshot, each with the names
//
//	provider/model, model,
//
// and then the same with a dated suffix removed (-2024-07-18, -20250929,
// @20250929), so "gpt-4o-mini-2024-07-18" finds "gpt-4o-mini" when the list
// has no entry of its own. A model name that carries a provider prefix
// ("anthropic/claude-…") is also tried without it. Nothing looser is tried:
// ok is false for a model the list does not name, and its cost is unknown.
func (t *Table) Lookup(provider, model string) (p Price, ok bool) {
	if t.last != nil {
		if l := t.last.p.Load(); l != nil && l.provider == provider && l.model == model {
			return l.price, l.ok
		}
	}
	p, ok = t.lookup(provider, model)
	if t.last != nil {
		t.last.p.Store(&lookedUp{provider: provider, model: model, price: p, ok: ok})
	}
	return p, ok
}

func (t *Table) lookup(provider, model string) (Price, bool) {
	names := candidates(strings.ToLower(provider), strings.ToLower(strings.TrimSpace(model)))
	for _, n := range names {
		if q, ok := t.overrides[n]; ok {
			return *q, true
		}
	}
	for _, n := range names {
		if l, ok := t.models[n]; ok {
			if q := l.price(); q != nil {
				return *q, true
			}
		}
	}
	return Price{}, false
}

// candidates lists the names Lookup tries, in order.
func candidates(provider, model string) []string {
	if model == "" {
		return nil
	}
	bases := []string{model}
	if d := undate(model); d != model {
		bases = append(bases, d)
	}
	var out []string
	add := func(n string) {
		for _, o := range out {
			if o == n {
				return
			}
		}
		out = append(out, n)
	}
	for _, b := range bases {
		if provider != "" {
			add(provider + "/" + b)
		}
		add(b)
		if pfx, rest, ok := strings.Cut(b, "/"); ok && rest != "" && knownProvider(pfx) {
			add(rest)
		}
	}
	return out
}

func knownProvider(p string) bool {
	switch p {
	case "openai", "anthropic", "azure", "gemini":
		return true
	}
	return false
}

// undate removes a trailing release date: -YYYY-MM-DD, -YYYYMMDD or
// @YYYYMMDD (Vertex style). Anything else is returned as is.
func undate(m string) string {
	isDigits := func(s string) bool {
		for _, c := range s {
			if c < '0' || c > '9' {
				return false
			}
		}
		return s != ""
	}
	if n := len(m); n > 11 && m[n-11] == '-' && m[n-6] == '-' && m[n-3] == '-' &&
		isDigits(m[n-10:n-6]) && isDigits(m[n-5:n-3]) && isDigits(m[n-2:]) && m[n-10] == '2' {
		return m[:n-11]
	}
	if n := len(m); n > 9 && (m[n-9] == '-' || m[n-9] == '@') && isDigits(m[n-8:]) && m[n-8] == '2' {
		return m[:n-9]
	}
	return m
}

// batchRule is the documented batch discount of a provider, applied where
// the list has no batch price of its own. Each is 50% of the live price:
//
//   - openai: the Batch API is billed at 50% of standard prices, cached
//     input included (OpenAI's pricing table lists batch cached-input rates
//     at half the standard ones).
//   - azure: Global/Data Zone Batch deployments cost 50% less than Global
//     Standard; cached input likewise.
//   - anthropic: Message Batches cost 50%; the prompt-caching multipliers
//     stack with it, so cache reads and writes are halved too.
//   - gemini: Batch Mode is 50% for input and output, but cache hits
//     inside a batch are charged the normal cached rate.
//
// Other providers (or a --prices entry naming none) get no batch price
// unless the entry lists one.
func batchRule(provider string, sync Rates) (Rates, string, bool) {
	half := func(r Rate) Rate { return Rate(math.Round(float64(r) / 2)) }
	switch provider {
	case "openai", "azure", "anthropic":
		return Rates{Input: half(sync.Input), Output: half(sync.Output), CacheRead: half(sync.CacheRead), CacheWrite: half(sync.CacheWrite)},
			provider + ": 50% of the live price (documented batch discount)", true
	case "gemini":
		return Rates{Input: half(sync.Input), Output: half(sync.Output), CacheRead: sync.CacheRead, CacheWrite: half(sync.CacheWrite)},
			"gemini: 50% of the live price, cache hits at the live cached rate (documented batch discount)", true
	}
	return Rates{}, "", false
}

// String describes p's live rates per million tokens, for logs.
func (p Price) String() string {
	m := func(r Rate) string { return strconv.FormatFloat(float64(r)/1e6, 'f', -1, 64) }
	return fmt.Sprintf("%s: $%s in, $%s out, $%s cache read, $%s cache write per 1M tokens",
		p.Model, m(p.Sync.Input), m(p.Sync.Output), m(p.Sync.CacheRead), m(p.Sync.CacheWrite))
}
