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
	s.undeferred()
	k := keyOfString(id)
	s.setMu.Lock()
	defer s.setMu.Unlock()
	x := &s.x
	i, have := x.findDone(k, id)
	if fp != 0 && legacy != nil {
		var old Fingerprint // computed at most once
		oldOf := func() Fingerprint {
			if old == 0 {
				old = legacy()
			}
			return old
		}
		if i >= 0 && have != 0 && have != fp && have == oldOf() {
			x.doneFP = adopt(x.doneFP, x.done.offAt(i), fp)
			x.unanswer(k, have)
			x.answer(k, fp)
			have = fp
			s.adopted++
		}
		if j, failed := x.findFailed(k, id); j >= 0 && failed != 0 && failed != fp && failed == oldOf() {
			x.failedFP = adopt(x.failedFP, x.failed.offAt(j), fp)
		}
	}
	return s.classifyLocked(k, id, fp, i, have)
}

// adopt records fp for the line at off in m, made if nil.
func adopt(m map[int64]Fingerprint, off int64, fp Fingerprint) map[int64]Fingerprint {
	if m == nil {
		m = make(map[int64]Fingerprint)
	}
	m[off] = fp
	return m
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
	adopted, ok := s.x.doneFP[l.Off]
	if !ok || l.FP == 0 || adopted == l.FP || !hasSeal(l.Line) {
		return l.Line
	}
	n := len(l.Line)
	if n < sealLen+fpLen || string(l.Line[n-sealLen-fpLen:n-sealLen-fpLen+len(fpKey)]) != fpKey {
		return l.Line
	}
	line := append([]byte(nil), l.Line...) // once per adopted line, ever
	fp := adopted.String()
	copy(line[n-sealLen-fpLen+len(fpKey):], fp)
	sum := crc32.Checksum(line[:n-sealLen], crcTable)
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	hex.Encode(line[n-11:n-3], b[:])
	return line
}
