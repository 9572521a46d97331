package source

import (
	"slices"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// TestEachIDMatchesEach: the ids a rerun's SkipAll confirms are exactly the
// ids Each gives, in the same order: escaped ids, Gemini's "key", lines
// without one (line-N, counted over blank lines), a custom_id that is not
// the first member, and a shard's share only.
func TestEachIDMatchesEach(t *testing.T) {
	path := writeInput(t,
		`{"custom_id":"a","prompt":"x"}`,
		``,
		`{"prompt":"no id"}`,
		`{"prompt":"late","custom_id":"b\"c\u00e9"}`,
		`{"key":"g1","request":{"contents":[{"parts":[{"text":"hi"}]}]}}`,
		`{"custom_id":null,"prompt":"null id"}`,
	)
	for _, shard := range []Shard{{}, {I: 1, N: 2}, {I: 2, N: 2}} {
		p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
		src := &Source{Path: path, Parser: p, Shard: shard}
		if _, err := src.Check(); err != nil {
			t.Fatal(err)
		}
		var want, got []string
		if err := src.Each(func(r *providers.Request) error { want = append(want, r.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := src.eachID(func(id string) bool { got = append(got, id); return true }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || (shard.N == 0 && len(got) != 5) {
			t.Fatalf("shard %v: eachID = %q, Each = %q", shard, got, want)
		}
		src.Close()
	}
}
