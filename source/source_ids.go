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
//
// They are kept in chunks of idChunk, never copied while the set grows: a
// doubling table held the old copy and the new one at once (128 MiB at 10M
// requests, the check's and the whole 10M run's peak). suspects gathers
// them into one table, freeing each chunk as it is copied.
type idSet struct {
	hash   func(string) uint64
	chunks []*offheap.Slice[uint64] // full ones, then the one being filled
	n      int
}

// idChunk is the hashes per chunk (512 KiB).
const idChunk = 64 << 10

// newIDSet hashes with maphash under seed, or with hash if it is set.
func newIDSet(seed maphash.Seed, hash func(string) uint64) *idSet {
	if hash == nil {
		hash = func(id string) uint64 { return maphash.String(seed, id) }
	}
	return &idSet{hash: hash}
}

func (s *idSet) add(id string) {
	i := s.n % idChunk
	if i == 0 {
		s.chunks = append(s.chunks, offheap.Make[uint64](idChunk))
	}
	s.chunks[len(s.chunks)-1].S[i] = s.hash(id)
	s.n++
}

// len is the number of ids added.
func (s *idSet) len() int { return s.n }

// release frees the hashes; the set is empty afterwards.
func (s *idSet) release() {
	for _, c := range s.chunks {
		c.Free()
	}
	s.chunks, s.n = nil, 0
}

// suspects returns the hashes seen more than once, and releases the set.
func (s *idSet) suspects() map[uint64]bool {
	all := offheap.Make[uint64](s.n)
	defer all.Free()
	sums := all.S
	for i, c := range s.chunks {
		copy(sums[i*idChunk:], c.S)
		c.Free()
	}
	s.release()
	// Two halves sorted at once, then merged: the sort is the one part of
	// the check that runs on a single core (0.1 s at 1M ids).
	a, b := sums[:len(sums)/2], sums[len(sums)/2:]
	done := make(chan struct{})
	go func() {
		slices.Sort(a)
		close(done)
	}()
	slices.Sort(b)
	<-done
	var dup map[uint64]bool
	prev, first := uint64(0), true
	for len(a) > 0 || len(b) > 0 {
		var v uint64
		if len(b) == 0 || (len(a) > 0 && a[0] <= b[0]) {
			v, a = a[0], a[1:]
		} else {
			v, b = b[0], b[1:]
		}
		if !first && v == prev {
			if dup == nil {
				dup = make(map[uint64]bool)
			}
			dup[v] = true
		}
		prev, first = v, false
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
	if id, ok := leadingCustomID(line); ok {
		return id, nil
	}
	return p.customIDSlow(line, lineNo)
}

// customIDSlow is customID through gjson, for a line with valid UTF-8.
func (p *Parser) customIDSlow(line []byte, lineNo int) (string, error) {
	var f lineFields
	if f.id = gjson.GetBytes(line, "custom_id"); !f.id.Exists() {
		f.key = gjson.GetBytes(line, "key")
	}
	return f.customID(lineNo)
}

// customIDHead is how a line whose first member is its custom_id starts,
// as generators and llmrun's examples write them.
const customIDHead = `{"custom_id":"`

// leadingCustomID is the custom_id of a compact line that starts with it,
// a non-empty string without escapes: what gjson finds there (the first
// "custom_id" member), without parsing the line. A rerun's id merge reads
// every input line's id; this takes about a tenth of gjson's time. ok is
// false for any other line.
func leadingCustomID(line []byte) (string, bool) {
	if !bytes.HasPrefix(line, []byte(customIDHead)) {
		return "", false
	}
	rest := line[len(customIDHead):]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || end+1 >= len(rest) || (rest[end+1] != ',' && rest[end+1] != '}') {
		return "", false
	}
	id := rest[:end]
	if bytes.IndexByte(id, '\\') >= 0 {
		return "", false
	}
	for _, c := range id {
		if c < 0x20 { // a control character: not valid JSON; gjson decides
			return "", false
		}
	}
	return string(id), true
}
