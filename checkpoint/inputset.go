package checkpoint

// InputSet sums up the requests of a run's input (their ids and
// fingerprints) in 16 bytes, whatever their number: a sum of a 64-bit hash
// of each pair, which does not depend on their order. The check pass, which
// reads every request anyway, adds them; a rerun then asks the Store
// whether its output answers exactly these requests (SkipAll) and, if so,
// needs no second pass over the input to find that nothing is to be sent.
//
// Two different sets of requests have the same sum and count only by a
// 64-bit collision (about 5·10^-20), the same order of chance the index
// already takes in identifying ids by their hashes.
//
// The zero InputSet is empty and ready to use.
type InputSet struct {
	n   int
	sum uint64
}

// Add adds one request.
func (s *InputSet) Add(id string, fp Fingerprint) {
	k := keyOfString(id)
	s.n++
	s.sum += pairHash(k.a, k.b, uint64(fp))
}

// Len is the number of requests added.
func (s *InputSet) Len() int { return s.n }

// pairHash mixes an id's key and a fingerprint into one 64-bit value.
func pairHash(a, b, fp uint64) uint64 {
	return mix64(a ^ mix64(b^mix64(fp)))
}

// mix64 is SplitMix64's finalizer: every input bit flips about half the
// output bits.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// SkipAll reports whether the output answers exactly the requests of in:
// every id of in with an answer of the same fingerprint (known, not 0),
// no answer to any other id, and no failure record. If so it records what
// Classify of every request followed by InputDone would (all of them met
// and skipped, the input complete) and the run has nothing to send;
// otherwise it changes nothing and the run classifies request by request.
func (s *Store) SkipAll(in InputSet) bool {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if s.x.failed.n != 0 || s.x.done.n != in.n || in.n == 0 {
		return false
	}
	var sum uint64
	for _, e := range s.x.done.s {
		if e.bl != 0 {
			sum += pairHash(e.a, e.bl&bMask, e.fp)
		}
	}
	if sum != in.sum {
		return false
	}
	for i := range s.x.done.s {
		if s.x.done.s[i].bl != 0 {
			s.x.done.markSeen(i)
		}
	}
	s.inputDone = true
	return true
}
