// Package jsonvalid checks JSON fast: the checkpoint validates every line
// of an output when it opens it, and the stream decoders every event they
// read, both mostly the text of answers inside JSON strings.
package jsonvalid

import (
	"encoding/binary"
	"math/bits"
)

// maxDepth bounds the nesting Valid accepts, as encoding/json does.
const maxDepth = 10000

// Valid reports whether b is one JSON value with optional space around
// it: the same answer as encoding/json.Valid, which a fuzz test checks.
//
// A 1M-line output is hundreds of megabytes, and a streamed answer is
// checked event by event, mostly answer text inside JSON strings. The
// general validators walk that text a byte at a time (about 3 ns a byte on
// the reference machine); Valid skips string content eight bytes at a
// time, stopping only at a quote, a backslash or a control character.
func Valid(b []byte) bool { return valid(b, false) }

// ObjectTail reports whether b ends a JSON object whose start, a '{' and
// one or more members each followed by a comma, was valid: whether
// `{"a":1,` + b is valid JSON. A stream decoder that has seen the start of
// an event before (every OpenAI chunk repeats its id, model and so on)
// checks only the rest.
func ObjectTail(b []byte) bool { return valid(b, true) }

// valid is Valid, or with tail ObjectTail.
func valid(b []byte, tail bool) bool {
	var stackBuf [32]byte
	stack := stackBuf[:0] // '{' or '[' per open container
	i := skipSpace(b, 0)
	if tail {
		stack = append(stack, '{')
		var ok bool
		if i, ok = key(b, i); !ok {
			return false
		}
	}
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		ok := true
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) == maxDepth {
				return false
			}
			var empty bool
			if i, empty = open(b, i); empty {
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i, ok = key(b, i); !ok {
					return false
				}
			}
			continue // the first member's value
		case '"':
			i, ok = str(b, i+1) // most of the bytes: called directly
		default:
			i, ok = bare(b, i)
		}
		if !ok {
			return false
		}
		// A value ended at i: close containers until one takes another member.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if top == '{' {
					if i, ok = key(b, i); !ok {
						return false
					}
				}
				break
			}
			if (top == '{' && b[i] != '}') || (top == '[' && b[i] != ']') {
				return false
			}
			stack = stack[:len(stack)-1]
			i++
		}
	}
}

// open reads the '{' or '[' at i and the space after it. empty reports
// that the container closes at once; next is then past its end, else where
// its first member starts.
func open(b []byte, i int) (next int, empty bool) {
	end := byte('}')
	if b[i] == '[' {
		end = ']'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	return i, false
}

// bare reads a literal or a number starting at i and returns the index
// after it.
func bare(b []byte, i int) (int, bool) {
	switch b[i] {
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	}
	return number(b, i)
}

// key reads `"name" :` and the space after it; it returns where the value
// starts.
func key(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := str(b, i+1)
	if !ok {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SWAR constants: one in every byte, and every byte's high bit.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// str reads the rest of a string whose opening quote is before i and returns
// the index after its closing quote.
func str(b []byte, i int) (int, bool) {
	for {
		// Eight bytes at a time until one is '"', '\\' or below 0x20. Each
		// term flags its bytes exactly up to its first hit (a borrow can only
		// flag bytes after it), so the lowest flag is the first such byte.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ (ones * '"')
			s := w ^ (ones * '\\')
			m := ((q - ones) &^ q) | ((s - ones) &^ s) | ((w - ones*0x20) &^ w)
			if m &= highs; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default: // fewer than eight bytes were left
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
