package canonjson

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"
)

// plain marks the bytes a string holds as they are: not '"', '\\' or a
// control character.
var plain = func() (t [256]bool) {
	for i := 0x20; i < 256; i++ {
		t[i] = i != '"' && i != '\\'
	}
	return t
}()

const hexLower = "0123456789abcdef"

// skipPlain returns the index of the first byte from i that is not plain,
// eight bytes at a time while none of them is: prompts are long strings.
func skipPlain(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if ((q-ones)&^q|(bs-ones)&^bs|(x-ones*0x20)&^x)&highs != 0 {
			break
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// shortEscape is the two-character escape RFC 8785 writes for c, 0 if none.
func shortEscape(c rune) byte {
	switch c {
	case '"':
		return '"'
	case '\\':
		return '\\'
	case '\b':
		return 'b'
	case '\f':
		return 'f'
	case '\n':
		return 'n'
	case '\r':
		return 'r'
	case '\t':
		return 't'
	}
	return 0
}

// scanString scans the string at b[i] == '"' and returns its end and
// whether it must be rewritten: an escape other than the one RFC 8785
// writes for its character.
func scanString(b []byte, i int) (end int, fix, ok bool) {
	i++
	for {
		i = skipPlain(b, i)
		if i >= len(b) || b[i] < 0x20 {
			return i, fix, false
		}
		if b[i] == '"' {
			return i + 1, fix, true
		}
		// An escape.
		if i+1 >= len(b) {
			return i, fix, false
		}
		switch e := b[i+1]; e {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			i += 2
		case '/':
			fix, i = true, i+2
		case 'u':
			r, n, good := unicodeEscape(b[i:])
			if !good {
				return i, fix, false
			}
			if !fix && (n != 6 || !canonicalU(b[i+2:i+6], r)) {
				fix = true
			}
			i += n
		default:
			return i, fix, false
		}
	}
}

// canonicalU reports whether the four hex digits h are how RFC 8785 (and
// this package, for a lone surrogate) writes r: a control character
// without a short escape, or a surrogate, in lowercase.
func canonicalU(h []byte, r rune) bool {
	if !(r < 0x20 && shortEscape(r) == 0) && !(r >= 0xD800 && r < 0xE000) {
		return false
	}
	for _, c := range h {
		if c >= 'A' && c <= 'F' {
			return false
		}
	}
	return true
}

// unicodeEscape decodes the \uXXXX escape at p (and the low surrogate
// escape after a high one), returning the character (or a lone
// surrogate) and the bytes it took.
func unicodeEscape(p []byte) (rune, int, bool) {
	r, ok := hex4(p)
	if !ok {
		return 0, 0, false
	}
	if r >= 0xD800 && r < 0xDC00 && len(p) >= 12 && p[6] == '\\' && p[7] == 'u' {
		if lo, ok := hex4(p[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, true
		}
	}
	return r, 6, true
}

func hex4(p []byte) (rune, bool) {
	if len(p) < 6 {
		return 0, false
	}
	var r rune
	for _, c := range p[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendUnescaped appends the decoded content of a scanned string.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			j := i
			for j < len(s) && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if s[i+1] == 'u' {
			r, n, _ := unicodeEscape(s[i:])
			dst = appendRuneLenient(dst, r)
			i += n
			continue
		}
		dst = append(dst, unescapeShort(s[i+1]))
		i += 2
	}
	return dst
}

// appendRuneLenient is utf8.AppendRune, but writes a lone surrogate as
// its own three bytes (WTF-8) instead of U+FFFD, so that keys that differ
// only there still differ.
func appendRuneLenient(dst []byte, r rune) []byte {
	if r >= 0xD800 && r < 0xE000 {
		return append(dst, 0xED, byte(0x80|(r>>6)&0x3F), byte(0x80|r&0x3F))
	}
	return utf8.AppendRune(dst, r)
}

func unescapeShort(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\', '/'
}

// emitString writes the scanned string content s in canonical form.
func (c *Canon) emitString(s []byte) {
	o := &c.out
	o.byte('"')
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] != '\\' {
			j++
		}
		o.bytes(s[i:j])
		if i = j; i >= len(s) {
			break
		}
		var r rune
		if s[i+1] == 'u' {
			var n int
			r, n, _ = unicodeEscape(s[i:])
			i += n
		} else {
			r = rune(unescapeShort(s[i+1]))
			i += 2
		}
		c.emitRune(r)
	}
	o.byte('"')
}

// emitRune writes one decoded character as RFC 8785 does.
func (c *Canon) emitRune(r rune) {
	o := &c.out
	if e := shortEscape(r); e != 0 {
		o.byte('\\')
		o.byte(e)
		return
	}
	if r < 0x20 || r >= 0xD800 && r < 0xE000 {
		o.byte('\\')
		o.byte('u')
		for sh := 12; sh >= 0; sh -= 4 {
			o.byte(hexLower[r>>sh&0xF])
		}
		return
	}
	var b [4]byte
	o.bytes(utf8.AppendRune(b[:0], r))
}

// scanNumber scans the number at b[i] and returns its end and whether it
// must be rewritten.
func scanNumber(b []byte, i int) (end int, fix, ok bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	intStart := i
	if i < len(b) && b[i] == '0' {
		i++
	} else if i = skipDigits(b, i); i == intStart {
		return i, false, false
	}
	intEnd, frac := i, -1
	if i < len(b) && b[i] == '.' {
		frac = i + 1
		if i = skipDigits(b, frac); i == frac {
			return i, false, false
		}
	}
	exp := false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		if i = skipDigits(b, j); i == j {
			return i, false, false
		}
		exp = true
	}
	lit := b[start:i]
	switch {
	case frac < 0 && !exp:
		// An integer, kept digit for digit (see the package doc); only -0 changes.
		return i, string(lit) == "-0", true
	case !exp && plainDecimal(b[intStart:intEnd], b[frac:i]):
		return i, false, true
	}
	var tmp [32]byte
	f, ok := formatNumber(tmp[:0], lit)
	return i, ok && string(f) != string(lit), true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// plainDecimal reports whether a decimal without exponent is already as
// ECMAScript prints its double, without parsing it: a last fraction digit
// other than 0, at most 15 significant digits (so no shorter decimal
// rounds to the same double) and at least 1e-6 (below, it prints with an
// exponent). Anything else is checked by formatting.
func plainDecimal(intPart, frac []byte) bool {
	if frac[len(frac)-1] == '0' {
		return false
	}
	sig := len(frac)
	if string(intPart) != "0" {
		sig += len(intPart)
	} else {
		zeros := 0
		for zeros < len(frac) && frac[zeros] == '0' {
			zeros++
		}
		if zeros > 5 {
			return false
		}
		sig -= zeros
	}
	return sig <= 15
}

// formatNumber appends the ECMAScript form of the number literal lit, as
// encoding/json writes a float64; ok is false for a number out of range.
func formatNumber(dst, lit []byte) ([]byte, bool) {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return dst, false
	}
	if f == 0 {
		f = 0 // -0 prints as 0
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7
		b := dst[start:]
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst, true
}

// emitNumber writes a number literal that scanNumber marked for rewriting.
func (c *Canon) emitNumber(lit []byte) {
	if string(lit) == "-0" {
		c.out.byte('0')
		return
	}
	var tmp [32]byte
	f, _ := formatNumber(tmp[:0], lit)
	c.out.bytes(f)
}
