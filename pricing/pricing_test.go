package pricing

import (
	"strings"
	"testing"
	"time"
)

// Hand-computed from the snapshot's rates (dollars per million tokens):
//
//	gpt-4o-mini        in 0.15  out 0.60  cache read 0.075
//	gpt-5              in 1.25  out 10    cache read 0.125
//	gpt-5.4            in 2.50  out 15    (above 272k: in 5, out 22.5)
//	claude-sonnet-4-5  in 3     out 15    cache read 0.30  cache write 3.75
//	claude-haiku-4-5   in 1     out 5
//	gemini-2.5-flash   in 0.30  out 2.50  cache read 0.03
//	gemini-2.5-pro     in 1.25  out 10    (above 200k: in 2.5, out 15)
//	azure gpt-4o       in 2.50  out 10    cache read 1.25
//	azure o4-mini      in 1.10  out 4.40  cache read 0.28 (Azure's own price)
func TestCost(t *testing.T) {
	tests := []struct {
		name            string
		provider, model string
		u               Usage
		batch           bool
		want            float64 // USD
	}{
		// 6000 uncached × 0.15 + 4000 cached × 0.075 + 500 out × 0.60, per 1M
		{"openai cached", "openai", "gpt-4o-mini", Usage{InputTokens: 10000, CacheReadTokens: 4000, OutputTokens: 500}, false, 0.0015},
		// all halved: 6000 × 0.075 + 4000 × 0.0375 + 500 × 0.30
		{"openai batch", "openai", "gpt-4o-mini", Usage{InputTokens: 10000, CacheReadTokens: 4000, OutputTokens: 500}, true, 0.00075},
		{"openai dated name", "openai", "gpt-4o-mini-2024-07-18", Usage{InputTokens: 10000, CacheReadTokens: 4000, OutputTokens: 500}, false, 0.0015},
		// 1000 × 1.25 + 1000 × 0.125 + 1000 × 10
		{"gpt-5 cached", "openai", "gpt-5", Usage{InputTokens: 2000, CacheReadTokens: 1000, OutputTokens: 1000}, false, 0.011375},
		// 200k × 2.5 + 1000 × 15: at the tier boundary the base price holds
		{"gpt-5.4 below tier", "openai", "gpt-5.4", Usage{InputTokens: 200000, OutputTokens: 1000}, false, 0.515},
		// 300k × 5 + 1000 × 22.5: the whole request at the long-context price
		{"gpt-5.4 long context", "openai", "gpt-5.4", Usage{InputTokens: 300000, OutputTokens: 1000}, false, 1.5225},
		// 100 × 3 + 8000 × 0.30 + 2000 × 3.75 + 300 × 15
		{"anthropic cache read and write", "anthropic", "claude-sonnet-4-5-20250929", Usage{InputTokens: 10100, CacheReadTokens: 8000, CacheWriteTokens: 2000, OutputTokens: 300}, false, 0.0147},
		// Message Batches: 50%, caching multipliers stack
		{"anthropic batch", "anthropic", "claude-sonnet-4-5", Usage{InputTokens: 10100, CacheReadTokens: 8000, CacheWriteTokens: 2000, OutputTokens: 300}, true, 0.00735},
		{"anthropic haiku", "anthropic", "claude-haiku-4-5", Usage{InputTokens: 1000, OutputTokens: 1000}, false, 0.006},
		{"anthropic prefixed name", "openai", "anthropic/claude-haiku-4-5", Usage{InputTokens: 1000, OutputTokens: 1000}, false, 0.006},
		// 5000 × 0.30 + 5000 × 0.03 + 1000 × 2.5
		{"gemini cached", "gemini", "gemini-2.5-flash", Usage{InputTokens: 10000, CacheReadTokens: 5000, OutputTokens: 1000}, false, 0.00415},
		// batch halves input and output, cache hits stay at the live cached rate
		{"gemini batch", "gemini", "gemini-2.5-flash", Usage{InputTokens: 10000, CacheReadTokens: 5000, OutputTokens: 1000}, true, 0.00215},
		// 250k × 2.5 + 100 × 15
		{"gemini long context", "gemini", "gemini-2.5-pro", Usage{InputTokens: 250000, OutputTokens: 100}, false, 0.6265},
		{"azure", "azure", "gpt-4o", Usage{InputTokens: 1000, OutputTokens: 1000}, false, 0.0125},
		// 1000 × 1.10 + 1000 × 0.28 + 1000 × 4.40
		{"azure own price", "azure", "o4-mini", Usage{InputTokens: 2000, CacheReadTokens: 1000, OutputTokens: 1000}, false, 0.00578},
		{"embedding", "openai", "text-embedding-3-small", Usage{InputTokens: 1_000_000}, false, 0.02},
	}
	tab := Snapshot()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := tab.Lookup(tt.provider, tt.model)
			if !ok {
				t.Fatalf("Lookup(%q, %q): unknown", tt.provider, tt.model)
			}
			c, ok := p.Cost(tt.u, tt.batch)
			if !ok {
				t.Fatalf("Cost: unknown")
			}
			if c != FromUSD(tt.want) {
				t.Errorf("Cost = %v (%d pico), want $%v", c, c, tt.want)
			}
		})
	}
}

func TestLookupUnknown(t *testing.T) {
	tab := Snapshot()
	for _, m := range [][2]string{
		{"openai", "llama3"},
		{"openai", "gpt-4o-minix"},          // no prefix matching
		{"openai", "gpt-4o-mini-turbo"},     // no guessing of variants
		{"openai", "gemini-2.5-flash"},      // Gemini's prices are for provider gemini
		{"openai", "meta/claude-haiku-4-5"}, // only a known provider prefix is stripped
		{"azure", "my-deployment"},
		{"anthropic", ""},
	} {
		if p, ok := tab.Lookup(m[0], m[1]); ok {
			t.Errorf("Lookup(%q, %q) = %v, want unknown", m[0], m[1], p)
		}
	}
}

func TestLookupNames(t *testing.T) {
	tab := Snapshot()
	for _, tt := range []struct{ provider, model, want string }{
		{"openai", "gpt-4o-mini", "gpt-4o-mini"},
		{"openai", "GPT-4o-Mini", "gpt-4o-mini"},
		{"openai", "gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18"}, // the list names it
		{"anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"anthropic", "claude-haiku-4-5@20251001", "claude-haiku-4-5"},
		{"azure", "gpt-4o", "azure/gpt-4o"},
		{"gemini", "gemini-2.5-flash", "gemini/gemini-2.5-flash"},
		{"", "gemini/gemini-2.5-flash", "gemini/gemini-2.5-flash"},
		{"mock", "gpt-5", "gpt-5"},
	} {
		p, ok := tab.Lookup(tt.provider, tt.model)
		if !ok || p.Model != tt.want {
			t.Errorf("Lookup(%q, %q) = %q, %v; want %q", tt.provider, tt.model, p.Model, ok, tt.want)
		}
	}
}

func TestUndate(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-4o-mini-2024-07-18":      "gpt-4o-mini",
		"claude-sonnet-4-5-20250929":  "claude-sonnet-4-5",
		"claude-3-haiku@20240307":     "claude-3-haiku",
		"gpt-4-0613":                  "gpt-4-0613", // not a date
		"gemini-2.5-flash-preview-05": "gemini-2.5-flash-preview-05",
		"x-20250929":                  "x",
		"-20250929":                   "-20250929",
	} {
		if got := undate(in); got != want {
			t.Errorf("undate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMaxCost(t *testing.T) {
	tab := Snapshot()
	p, _ := tab.Lookup("anthropic", "claude-sonnet-4-5")
	// Every input token at the dearest input rate (a 5-minute cache write,
	// $3.75/M) plus max tokens at $15/M: 1000 × 3.75 + 500 × 15.
	c, ok := p.MaxCost(1000, 500, false)
	if !ok || c != FromUSD(0.01125) {
		t.Errorf("MaxCost = %v, %v; want $0.01125", c, ok)
	}
	// It bounds any actual cost of the same request.
	for _, u := range []Usage{
		{InputTokens: 1000, OutputTokens: 500},
		{InputTokens: 1000, CacheWriteTokens: 1000, OutputTokens: 500},
		{InputTokens: 1000, CacheReadTokens: 600, CacheWriteTokens: 400, OutputTokens: 500},
	} {
		if a, _ := p.Cost(u, false); a > c {
			t.Errorf("Cost(%+v) = %v > MaxCost %v", u, a, c)
		}
	}
	// Batch: half.
	if b, _ := p.MaxCost(1000, 500, true); b != c/2 {
		t.Errorf("batch MaxCost = %v, want %v", b, c/2)
	}
}

func TestSnapshotSane(t *testing.T) {
	tab := Snapshot()
	if _, err := time.Parse(time.DateOnly, tab.Date()); err != nil {
		t.Errorf("Date() = %q: %v", tab.Date(), err)
	}
	if tab.Source() == "" {
		t.Error("Source() is empty")
	}
	per := map[string]int{}
	for name, l := range tab.models {
		p := l.price()
		if p == nil {
			t.Errorf("%s: entry does not parse", name)
			continue
		}
		per[p.Provider]++
		if p.Sync.Input <= 0 {
			t.Errorf("%s: input price %d", name, p.Sync.Input)
		}
		if p.Batch == nil {
			t.Errorf("%s: no batch price for provider %q", name, p.Provider)
		}
		// No cache price above the input price except writes (Anthropic 1.25×).
		if p.Sync.CacheRead > p.Sync.Input {
			t.Errorf("%s: cache read %d above input %d", name, p.Sync.CacheRead, p.Sync.Input)
		}
	}
	for _, prov := range []string{"openai", "anthropic", "azure", "gemini"} {
		if per[prov] < 10 {
			t.Errorf("%d models of %s, want ≥ 10", per[prov], prov)
		}
	}
	if len(per) != 4 {
		t.Errorf("providers %v, want only openai, anthropic, azure, gemini", per)
	}
}

func TestWithPrices(t *testing.T) {
	file := `{
  "gpt-4o-mini": {"input_per_mtok": 0.10, "output_per_mtok": 0.40, "provider": "openai"},
  "my-llama": {"input_per_mtok": 0.2, "output_per_mtok": 0.6, "cache_read_per_mtok": 0.05},
  "azure/my-deployment": {"input_cost_per_token": 2.5e-6, "output_cost_per_token": 1e-5,
                          "input_cost_per_token_batches": 1e-6, "output_cost_per_token_batches": 4e-6,
                          "litellm_provider": "azure", "mode": "chat", "supports_vision": true},
  "sample_spec": {"input_cost_per_token": "see docs"}
}`
	tab, err := Snapshot().WithPrices(strings.NewReader(file), "prices.json")
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot's latest answer is its own: the table on top looks up
	// the same model afresh.
	if p, _ := Snapshot().Lookup("openai", "gpt-4o-mini"); p.Override {
		t.Fatal("the snapshot answered with an override")
	}
	u := Usage{InputTokens: 1_000_000, CacheReadTokens: 500_000, OutputTokens: 1_000_000}
	for _, tt := range []struct {
		provider, model string
		batch           bool
		want            float64
		known           bool
	}{
		// overrides the snapshot: 0.5M × 0.10 + 0.5M × 0.10 (no cache price: input rate) + 1M × 0.40
		{"openai", "gpt-4o-mini", false, 0.50, true},
		{"openai", "gpt-4o-mini", true, 0.25, true}, // provider openai: documented 50%
		// 0.5M × 0.2 + 0.5M × 0.05 + 1M × 0.6
		{"openai", "my-llama", false, 0.725, true},
		{"openai", "my-llama", true, 0, false}, // no provider, no batch price: unknown
		// deployment name under azure/: 0.5M × 2.5 + 0.5M × 2.5 + 1M × 10
		{"azure", "my-deployment", false, 12.5, true},
		// listed batch rates, cache read from Azure's 50% rule: 0.5M × 1 + 0.5M × 1.25 + 1M × 4
		{"azure", "my-deployment", true, 5.125, true},
		// the rest of the snapshot is still there
		{"openai", "gpt-5", false, 0.5*1.25 + 0.5*0.125 + 10, true},
	} {
		p, ok := tab.Lookup(tt.provider, tt.model)
		if !ok {
			t.Fatalf("Lookup(%q): unknown", tt.model)
		}
		c, known := p.Cost(u, tt.batch)
		if known != tt.known || (known && c != FromUSD(tt.want)) {
			t.Errorf("%s batch=%v: Cost = %v, %v; want $%v, %v", tt.model, tt.batch, c, known, tt.want, tt.known)
		}
	}
	if p, _ := tab.Lookup("openai", "gpt-4o-mini"); !p.Override {
		t.Error("override not marked")
	}
	// The snapshot itself is untouched.
	if p, _ := Snapshot().Lookup("openai", "gpt-4o-mini"); p.Override || p.Sync.Input != 150000 {
		t.Errorf("snapshot changed: %+v", p)
	}
}

func TestWithPricesErrors(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"[]", "prices.json:1: want a JSON object"},
		{"{\n\"a\": {\"input_per_mtok\": -1, \"output_per_mtok\": 1}\n}", "prices.json:2: \"a\": input_per_mtok: want a price of 0 or more, have -1"},
		{"{\n\"a\": {\"input_per_mtok\": 1, \"output_per_mtok\": 1},\n\"b\": {\"input_per_mtok\": 1}\n}", "prices.json:3: \"b\": no output price"},
		{"{\"a\": {\"input_per_mtok\": 1, \"input_cost_per_token\": 1e-6, \"output_per_mtok\": 1}}", "given twice"},
		{"{\"a\": {\"output_per_mtok\": 1}}", "no input price"},
		{"{\"a\": {\"input_per_mtok\": \"1\", \"output_per_mtok\": 1}}", "input_per_mtok: want a number"},
		{"{\"a\": 3}", "want an object of prices"},
		{"{\"a\": {\"input_per_mtok\": 1, \"output_per_mtok\": 1, \"batch_input_per_mtok\": 0.5}}", "batch input price without a batch output"},
		{"{\n\n\"a\": {\"input_per_mtok\": 1,,}}", "prices.json:3:"},
		{"{}", "no model prices"},
	} {
		_, err := Snapshot().WithPrices(strings.NewReader(tt.file), "prices.json")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("WithPrices(%q) = %v, want error containing %q", tt.file, err, tt.want)
		}
	}
	// An embedding model needs no output price.
	if _, err := Snapshot().WithPrices(strings.NewReader(`{"e": {"input_per_mtok": 0.02, "mode": "embedding"}}`), "p"); err != nil {
		t.Errorf("embedding entry: %v", err)
	}
}

func TestCostString(t *testing.T) {
	for usd, want := range map[float64]string{
		0:         "$0",
		0.0015:    "$0.0015",
		0.0001234: "$0.0001234",
		0.0147:    "$0.0147",
		1.5225:    "$1.5225",
		1234.5:    "$1234.50",
		-0.25:     "-$0.2500",
	} {
		if got := FromUSD(usd).String(); got != want {
			t.Errorf("FromUSD(%v).String() = %q, want %q", usd, got, want)
		}
	}
}
