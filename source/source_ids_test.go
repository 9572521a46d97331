package source

import (
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
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

// TestIDSetSuspectsAcrossChunks: hashes that repeat across the set's
// chunks (the first in one, the repeat chunks later, or in the last,
// partly filled one) are all suspects, and nothing else is; the chunks
// are freed once gathered.
func TestIDSetSuspectsAcrossChunks(t *testing.T) {
	n := 3*idChunk + 5
	s := newIDSet(maphash.MakeSeed(), func(id string) uint64 {
		v, _ := strconv.ParseUint(id, 10, 64)
		return v
	})
	want := map[uint64]bool{7: true, idChunk + 1: true, 3 * idChunk: true}
	for i := range n {
		s.add(strconv.Itoa(i))
	}
	for _, v := range []int{7, idChunk + 1, 3 * idChunk, 7} { // repeats in later chunks, 3*idChunk in the last one
		s.add(strconv.Itoa(v))
	}
	if s.len() != n+4 || len(s.chunks) != 4 {
		t.Fatalf("len %d in %d chunks", s.len(), len(s.chunks))
	}
	got := s.suspects()
	if !maps.Equal(got, want) {
		t.Errorf("suspects = %v, want %v", got, want)
	}
	if s.chunks != nil || s.len() != 0 {
		t.Errorf("%d chunks, %d ids left after suspects", len(s.chunks), s.len())
	}
}

// TestLeadingCustomIDIsGJSON: the fast path of a line's custom_id gives
// what the parse does (gjson's first "custom_id" member), and stands aside
// for any line it cannot read alone.
func TestLeadingCustomIDIsGJSON(t *testing.T) {
	var p Parser
	for _, line := range []string{
		`{"custom_id":"request-00000001","prompt":"x"}`,
		`{"custom_id":"a"}`,
		`{"custom_id":"héllo wörld","prompt":"x"}`,
		`{"custom_id":"a\"b","prompt":"x"}`,
		`{"custom_id":"a\\b","prompt":"x"}`,
		`{"custom_id":"","prompt":"x"}`,
		`{"custom_id":"a" ,"prompt":"x"}`,
		`{"custom_id":"a","custom_id":"b"}`,
		`{ "custom_id":"a","prompt":"x"}`,
		`{"custom_id":12,"prompt":"x"}`,
		`{"prompt":"x","custom_id":"late"}`,
		`{"custom_id":"a`,
		`{"custom_id":"a"`,
		`{"custom_id":"tab	in","prompt":"x"}`,
	} {
		want, wantErr := p.customIDSlow([]byte(line), 7)
		got, err := p.customID([]byte(line), 7)
		if got != want || (err == nil) != (wantErr == nil) {
			t.Errorf("%s: customID = %q, %v; the parse's = %q, %v", line, got, err, want, wantErr)
		}
		if id, ok := leadingCustomID([]byte(line)); ok && id != want {
			t.Errorf("%s: fast path %q, gjson %q", line, id, want)
		}
	}
}

// TestIDSetSuspectsSmall: the two sorted halves are merged whole: a repeat
// within either half or across them is found, in sets of any size.
func TestIDSetSuspectsSmall(t *testing.T) {
	for _, tc := range []struct {
		hashes []uint64
		want   map[uint64]bool
	}{
		{[]uint64{5}, nil},
		{[]uint64{5, 5}, map[uint64]bool{5: true}},
		{[]uint64{5, 6}, nil},
		{[]uint64{9, 1, 9}, map[uint64]bool{9: true}},
		{[]uint64{3, 3, 1, 2}, map[uint64]bool{3: true}},
		{[]uint64{1, 2, 4, 4}, map[uint64]bool{4: true}},
		{[]uint64{0, 7, 2, 0, 7, 7}, map[uint64]bool{0: true, 7: true}},
	} {
		s := newIDSet(maphash.MakeSeed(), func(id string) uint64 {
			v, _ := strconv.ParseUint(id, 10, 64)
			return v
		})
		for _, h := range tc.hashes {
			s.add(strconv.FormatUint(h, 10))
		}
		if got := s.suspects(); !maps.Equal(got, tc.want) {
			t.Errorf("%v: suspects = %v, want %v", tc.hashes, got, tc.want)
		}
	}
}
