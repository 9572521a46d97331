package checkpoint

import (
	"encoding/hex"
	"fmt"
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
	v, ok := parseHex16(s)
	if !ok {
		return 0, fmt.Errorf("checkpoint: fingerprint %q: want 16 hex digits", s)
	}
	return v, nil
}

// parseHex16 parses exactly 16 hex digits, either case, as
// strconv.ParseUint(s, 16, 64) would: every output line's load reads
// one, and ParseUint took about a tenth of a rerun's load.
func parseHex16[T string | []byte](s T) (Fingerprint, bool) {
	if len(s) != 16 {
		return 0, false
	}
	var v uint64
	for i := range 16 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return Fingerprint(v), true
}
