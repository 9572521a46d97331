package checkpoint

import (
	"encoding/hex"
	"hash/crc32"
)

// ClassifyAdopting is Classify for a caller whose fingerprint scheme
// changed: legacy computes the request's fingerprint the way earlier
// versions did. An answer (or failure record) whose fingerprint is
// neither unknown nor fp but legacy's is adopted: recorded under fp, as if
// it had been made for it, instead of the request being sent again. The
// output's lines are rewritten with their new fingerprints at Close, so
// adoption happens once; legacy is called only for ids whose stored
// fingerprint differs from fp.
func (s *Store) ClassifyAdopting(id string, fp Fingerprint, legacy func() Fingerprint) Verdict {
	k := keyOfString(id)
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if fp != 0 && legacy != nil {
		var old Fingerprint // computed at most once
		oldOf := func() Fingerprint {
			if old == 0 {
				old = legacy()
			}
			return old
		}
		if i := s.x.done.find(k); i >= 0 {
			if have := s.x.done.fpAt(i); have != 0 && have != fp && have == oldOf() {
				s.x.done.set(i, fp, s.x.done.lineAt(i))
				s.adopted++
			}
		}
		if j := s.x.failed.find(k); j >= 0 {
			if have := s.x.failed.fpAt(j); have != 0 && have != fp && have == oldOf() {
				s.x.failed.set(j, fp, s.x.failed.lineAt(j))
			}
		}
	}
	return s.classifyLocked(k, fp)
}

// Adopted is how many answers ClassifyAdopting re-fingerprinted.
func (s *Store) Adopted() int {
	s.setMu.RLock()
	defer s.setMu.RUnlock()
	return s.adopted
}

// adoptedLine is output line l as a compaction writes it: with the
// fingerprint its id's index entry holds if adoption changed it, resealed.
// A line without a seal keeps its old fingerprint (the next run adopts it
// again). Requires s.setMu.
func (s *Store) adoptedLine(l *scanLine) []byte {
	i := s.x.done.find(l.Key)
	if i < 0 || l.FP == 0 || s.x.done.fpAt(i) == l.FP || !hasSeal(l.Line) {
		return l.Line
	}
	n := len(l.Line)
	if n < sealLen+fpLen || string(l.Line[n-sealLen-fpLen:n-sealLen-fpLen+len(fpKey)]) != fpKey {
		return l.Line
	}
	line := append([]byte(nil), l.Line...) // once per adopted line, ever
	fp := s.x.done.fpAt(i).String()
	copy(line[n-sealLen-fpLen+len(fpKey):], fp)
	sum := crc32.Checksum(line[:n-sealLen], crcTable)
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	hex.Encode(line[n-11:n-3], b[:])
	return line
}
