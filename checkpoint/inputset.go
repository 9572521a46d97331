package checkpoint

// InputSet sums up the requests of a run's input (their ids and
// fingerprints) in a few words, whatever their number: a sum of a 64-bit
// hash of each pair, which does not depend on their order. The check pass,
// which reads every request anyway, adds them; a rerun then asks the Store
// whether its output answers exactly these requests (SkipAll) and, if so,
// does not parse and fingerprint the input a second time to find that
// nothing is to be sent.
//
// The sum compares the fingerprints (themselves hashes of the requests):
// two different sets of requests have the same sum and count only by a
// 64-bit collision. The ids are compared exactly: SkipAll reads them again
// (WithIDs) and confirms each against its line in the output.
//
// The zero InputSet is empty and ready to use.
type InputSet struct {
	n   int
	sum uint64
	ids func(yield func(id string) bool) error
}

// Add adds one request.
func (s *InputSet) Add(id string, fp Fingerprint) {
	s.n++
	s.sum += pairHash(keyOfString(id), fp)
}

// Len is the number of requests added.
func (s *InputSet) Len() int { return s.n }

// WithIDs returns s with the way to read its ids again, in any order,
// each once: SkipAll needs it (without it SkipAll says no).
func (s InputSet) WithIDs(ids func(yield func(id string) bool) error) InputSet {
	s.ids = ids
	return s
}

// pairHash mixes an id's key and a fingerprint into one 64-bit value.
func pairHash(k idKey, fp Fingerprint) uint64 {
	return mix64(uint64(k) ^ mix64(uint64(fp)))
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
// otherwise the run classifies request by request (the ids SkipAll met
// stay marked as met, which that pass does anyway).
//
// The counts and sums are compared first; then the ids: Open has met them
// with the output's as it read it when in was its Options.Expect
// (idMerge); otherwise every id of in is looked up and confirmed against
// the custom_id of its line (a read in about file order, through
// lineReader's window). When Open confirmed them it left the answers out
// of the index (see deferred.go), and SkipAll takes them without one. Either way the distinct ids of the input and the
// distinct ids of the output are the same ids, not only the same hashes.
func (s *Store) SkipAll(in InputSet) bool {
	s.indexed()
	if s.skipDeferred(in) {
		return true // met one to one at Open, and never indexed
	}
	s.undeferred()
	s.setMu.Lock()
	defer s.setMu.Unlock()
	x := &s.x
	if x.failed.n != 0 || x.done.n != in.n || in.n == 0 || x.doneSum != in.sum || in.ids == nil {
		return false
	}
	if x.merge.confirmed(in) {
		// Open met every answer's id with the input's, one to one.
		x.done.markAllSeen()
		s.inputDone = true
		return true
	}
	met := 0
	err := in.ids(func(id string) bool {
		i := x.done.lookup(keyOfString(id), func(i int) bool { return x.outR.hasID(x.done.offAt(i), id) })
		if i < 0 {
			return false
		}
		x.done.markSeen(i)
		met++
		return true
	})
	// As many ids as answers, each with its answer, and every answer met.
	if err != nil || met != in.n || x.done.unseen() != 0 {
		return false
	}
	s.inputDone = true
	return true
}
