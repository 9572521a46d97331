// Package jsonw holds the one JSON string escaper that the hand-written JSON
// writers share (the providers' prompt and output lines, the mock's
// answers), so that escaping rules live in one place.
package jsonw

import "unicode/utf8"

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string as encoding/json's Marshal does:
// '"', '\' and control characters escaped (\b \f \n \r \t by name), U+2028
// and U+2029 escaped, and each invalid UTF-8 byte as \ufffd. With html,
// '<', '>' and '&' become \u003c \u003e \u0026 (Marshal's default); without
// it they stay as they are (an Encoder with SetEscapeHTML(false)).
func AppendString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendASCIIEscape(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendASCIIEscape appends the escape of one ASCII byte that needs one.
func appendASCIIEscape(b []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
}
