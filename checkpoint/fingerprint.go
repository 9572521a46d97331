package checkpoint

import (
	"encoding/hex"
	"fmt"
	"strconv"
)

// Fingerprint identifies a request as it was sent: the runner hashes the
// canonical body and the settings that change it (provider, base URL,
// model, system, max tokens, translation) into it. The Store writes it into
// each line it appends and compares it on rerun: an id whose line was made
// for the same fingerprint is done; an id whose request changed is sent
// again, and its new line supersedes the old one.
//
// Zero means unknown: a line written without one (by an older llmrun, or by
// a caller that does not fingerprint its requests) answers its id whatever
// the request now is.
type Fingerprint uint64

// String is the fingerprint as lines carry it: 16 lowercase hex digits.
func (f Fingerprint) String() string {
	var b [8]byte
	for i := range b {
		b[i] = byte(f >> (56 - 8*i))
	}
	return hex.EncodeToString(b[:])
}

// ParseFingerprint parses 16 hex digits.
func ParseFingerprint(s string) (Fingerprint, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("checkpoint: fingerprint %q: want 16 hex digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: fingerprint %q: want 16 hex digits", s)
	}
	return Fingerprint(v), nil
}
