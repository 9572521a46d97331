package providers

import (
	"bytes"
	"encoding/json"
)

// AppendCompactJSON appends the valid JSON value raw as encoding/json's
// Marshal writes a json.RawMessage: whitespace outside strings dropped,
// '<', '>', '&', U+2028 and U+2029 escaped. A value that needs neither
// (the usual answer body) is copied as it is, after one pass over it,
// instead of encoding/json's state machine per byte.
func AppendCompactJSON(dst, raw []byte) []byte {
	if !needsCompacting(raw) {
		return append(dst, raw...)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return append(dst, raw...) // not JSON: the caller validated it
	}
	var h bytes.Buffer
	json.HTMLEscape(&h, c.Bytes())
	return append(dst, h.Bytes()...)
}

// needsCompacting reports whether raw has whitespace outside its strings,
// or a character encoding/json escapes for HTML. It skips, a byte a table
// lookup, what cannot matter: in a string anything but a quote, a
// backslash, '<', '>', '&' and 0xE2; outside, also whitespace.
func needsCompacting(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		for i < len(raw) && compactSkip[raw[i]]&skipBit(in) != 0 {
			i++
		}
		if i == len(raw) {
			break
		}
		switch c := raw[i]; c {
		case '"':
			in = !in
		case '\\':
			if in {
				i++ // the escaped character
			}
		case ' ', '\t', '\n', '\r':
			if !in {
				return true
			}
		case '<', '>', '&':
			return true
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9) {
				return true
			}
		}
	}
	return false
}

// compactSkip marks the bytes needsCompacting passes over: bit 1 in a
// string, bit 2 outside one.
var compactSkip = func() (t [256]byte) {
	for c := range t {
		switch c {
		case '"', '\\', '<', '>', '&', 0xE2:
		case ' ', '\t', '\n', '\r':
			t[c] = 1
		default:
			t[c] = 3
		}
	}
	return t
}()

func skipBit(in bool) byte {
	if in {
		return 1
	}
	return 2
}
