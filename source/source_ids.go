package source

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/offheap"
)

// idSet is what the check pass keeps to find repeated custom_ids: a 64-bit
// hash per request (8 bytes, where a map of the ids took about 150), never
// the ids themselves. Equal hashes are only suspects; the file is read
// again to compare the ids (see Source.duplicate). The hashes live outside
// the Go heap, so that they neither double the collector's goal nor linger
// in the heap after the check: release returns them at once.
type idSet struct {
	hash func(string) uint64
	sums []uint64
	mem  *offheap.Slice[uint64] // owns sums' backing array
}

// newIDSet hashes with maphash under seed, or with hash if it is set.
func newIDSet(seed maphash.Seed, hash func(string) uint64) *idSet {
	if hash == nil {
		hash = func(id string) uint64 { return maphash.String(seed, id) }
	}
	return &idSet{hash: hash}
}

func (s *idSet) add(id string) {
	if len(s.sums) == cap(s.sums) {
		// Doubling: the new table's untouched pages cost nothing until used.
		mem := offheap.Make[uint64](max(2*cap(s.sums), 64<<10))
		s.sums = append(mem.S[:0], s.sums...)
		s.mem.Free()
		s.mem = mem
	}
	s.sums = append(s.sums, s.hash(id))
}

// len is the number of ids added.
func (s *idSet) len() int { return len(s.sums) }

// release frees the hashes; the set is empty afterwards.
func (s *idSet) release() {
	s.mem.Free()
	s.sums, s.mem = nil, nil
}

// suspects sorts the hashes and returns those seen more than once.
func (s *idSet) suspects() map[uint64]bool {
	slices.Sort(s.sums)
	var dup map[uint64]bool
	for i := 1; i < len(s.sums); i++ {
		if s.sums[i] == s.sums[i-1] {
			if dup == nil {
				dup = make(map[uint64]bool)
			}
			dup[s.sums[i]] = true
		}
	}
	return dup
}

// duplicate reads the input again to tell real repeats from hash
// collisions among the suspects, and reports the first repeat in file
// order with both lines; nil if the suspects were only collisions. Only
// the suspects' ids are kept meanwhile.
func (s *Source) duplicate(ids *idSet, suspects map[uint64]bool) error {
	first := make(map[string]int) // id → line, suspects only
	return s.Records(func(line []byte, n int) error {
		req, _, err := s.Parser.parse(line, n)
		if err != nil {
			return &InputError{Path: s.name(), Line: n, Msg: err.Error()}
		}
		if !suspects[ids.hash(req.ID)] {
			return nil
		}
		if at, ok := first[req.ID]; ok {
			return &InputError{Path: s.name(), Line: n, FirstLine: at, Msg: fmt.Sprintf("duplicate custom_id %q", req.ID)}
		}
		first[req.ID] = n
		return nil
	})
}

// eachID reads the checked input again for its requests' custom_ids alone,
// in file order, each as Parse gives it (line-N for a line without one),
// those of the source's shard only. It is what a rerun's SkipAll reads to
// confirm, id by id, that its output answers them: a few hundred
// nanoseconds a line, against microseconds for a parse that builds the
// request. The input must not have changed since the check (as for Each).
func (s *Source) eachID(yield func(id string) bool) error {
	return walk(s, func(line []byte, n int) (string, string, error) {
		id, err := s.Parser.customID(line, n)
		return id, id, err
	}, func(id string) (bool, error) { return yield(id), nil })
}

// customID is the custom_id Parse gives line, without the rest of Parse.
func (p *Parser) customID(line []byte, lineNo int) (string, error) {
	if !utf8.Valid(line) {
		if !p.LossyUTF8 {
			return "", fmt.Errorf("invalid UTF-8 at byte %d", invalidUTF8At(line)+1)
		}
		line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
	}
	var f lineFields
	if f.id = gjson.GetBytes(line, "custom_id"); !f.id.Exists() {
		f.key = gjson.GetBytes(line, "key")
	}
	return f.customID(lineNo)
}
