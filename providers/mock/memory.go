package mock

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
)

// The server's memory of what it has seen is bounded: a fifo keeps the
// last cap keys inserted and forgets the oldest first, so a server that
// has answered ten million requests holds no more than one that answered
// a hundred thousand (issue 11).

// DefaultRemember is Config.RememberBodies and Config.CachePrefixes when
// unset: 65,536 entries, about 4 MB each at most.
const DefaultRemember = 1 << 16

// fifo is a map of at most cap entries; inserting a new key into a full
// one evicts the oldest key inserted. It is not safe for concurrent use
// (the server holds s.mu).
type fifo[V any] struct {
	m    map[uint64]V
	ring []uint64 // keys in insertion order; once full, ring[next] is the oldest
	next int
	cap  int
}

// newFIFO returns an empty fifo of capacity n (DefaultRemember for n <= 0).
func newFIFO[V any](n int) *fifo[V] {
	if n <= 0 {
		n = DefaultRemember
	}
	return &fifo[V]{m: make(map[uint64]V, min(n, 1024)), cap: n}
}

func (f *fifo[V]) get(k uint64) (V, bool) {
	v, ok := f.m[k]
	return v, ok
}

// put sets k to v, evicting the oldest key when k is new and f is full.
func (f *fifo[V]) put(k uint64, v V) {
	if _, ok := f.m[k]; !ok {
		if len(f.ring) < f.cap {
			f.ring = append(f.ring, k)
		} else {
			delete(f.m, f.ring[f.next])
			f.ring[f.next] = k
			f.next = (f.next + 1) % f.cap
		}
	}
	f.m[k] = v
}

// bodyState is what the server remembers about one request body: request
// ids number its arrivals, fault selection its admitted attempts, and
// Stats.Duplicates its completions.
type bodyState struct {
	arrivals, admitted int32
	done               bool
}

// bodyKey is the fifo key of a body hash.
func bodyKey(h [32]byte) uint64 { return binary.LittleEndian.Uint64(h[:8]) }

// body returns the state of body h. It requires s.mu held.
func (s *Server) body(h [32]byte) bodyState {
	bs, _ := s.bodies.get(bodyKey(h))
	return bs
}

// setBody records the state of body h. It requires s.mu held.
func (s *Server) setBody(h [32]byte, bs bodyState) {
	s.bodies.put(bodyKey(h), bs)
}

// completed records a completion of body h and reports whether it was a
// duplicate. It requires s.mu held.
func (s *Server) completed(h [32]byte) (dup bool) {
	bs := s.body(h)
	if bs.done {
		s.stats.Duplicates++
		return true
	}
	bs.done = true
	s.setBody(h, bs)
	return false
}

// prefix is a cacheable prefix of a request: a hash of everything up to
// it (model included) and its token count.
type prefix struct {
	hash   uint64
	tokens int
}

// prefixHash hashes a request's prompt as it is walked, block by block;
// sum marks a prefix.
type prefixHash struct{ h hash.Hash64 }

func newPrefixHash(tag byte, model string) prefixHash {
	p := prefixHash{fnv.New64a()}
	p.h.Write([]byte{tag})
	p.write(model)
	return p
}

// write adds one field, length-prefixed so that fields cannot run into
// each other.
func (p prefixHash) write(s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	p.h.Write(n[:])
	p.h.Write([]byte(s))
}

func (p prefixHash) sum(tokens int) prefix { return prefix{hash: p.h.Sum64(), tokens: tokens} }

// openAIMinCached and openAICacheStep are OpenAI's prompt caching rule: a
// prompt of at least 1,024 tokens is cached in 128-token steps.
const (
	openAIMinCached = 1024
	openAICacheStep = 128
)

// cacheLookup returns the tokens of req's longest prefix in the prompt
// cache (0 when none). It requires s.mu held.
func (s *Server) cacheLookup(req *request) int {
	for i := len(req.prefixes) - 1; i >= 0; i-- {
		if _, ok := s.prefixes.get(req.prefixes[i].hash); ok {
			return req.prefixes[i].tokens
		}
	}
	return 0
}

// cacheStore puts every prefix of req in the prompt cache and returns the
// tokens written beyond read (Anthropic bills them; OpenAI writes free).
// It requires s.mu held.
func (s *Server) cacheStore(req *request, read int) (written int) {
	for _, p := range req.prefixes {
		s.prefixes.put(p.hash, struct{}{})
	}
	if n := len(req.prefixes); n > 0 && req.cacheWrites {
		written = max(req.prefixes[n-1].tokens-read, 0)
	}
	return written
}
