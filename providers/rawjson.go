package providers

import "math/bits"

// Shallow walking of raw JSON for the stream decoders' hot path. gjson
// unescapes every string value it visits (one allocation per value with an
// escape, which in LLM text means most deltas with a newline or a quote);
// these helpers hand out raw slices instead, so a decoder can append the
// escaped text as it is. They expect valid JSON (check once with
// jsonvalid.Valid) and never panic on invalid input; they just stop early.

// EachMember calls fn with the raw key (quotes included) and the raw value
// of each member of the JSON object obj, in order, until fn returns false.
// Nothing is copied: key and val alias obj.
func EachMember(obj string, fn func(key, val string) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	EachMemberFrom(obj, i+1, fn)
}

// EachMemberFrom is EachMember from obj[i] on, where i is past the '{' or
// a comma between members: a decoder that knows the members before i
// (they repeat what it has already applied) starts after them.
func EachMemberFrom(obj string, i int, fn func(key, val string) bool) {
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return
		}
		k := i
		i = endString(obj, i)
		key := obj[k:i]
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		if i >= len(obj) {
			return
		}
		v := i
		i = endValue(obj, i)
		if !fn(key, obj[v:i]) {
			return
		}
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

// EachElement calls fn with each raw element of the JSON array arr, in
// order, until fn returns false.
func EachElement(arr string, fn func(val string) bool) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	i++
	for {
		i = skipSpace(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		v := i
		i = endValue(arr, i)
		if !fn(arr[v:i]) {
			return
		}
		i = skipSpace(arr, i)
		if i >= len(arr) || arr[i] != ',' {
			return
		}
		i++
	}
}

// StringInside returns the inside of a raw JSON string (still escaped) and
// true, or "", false when raw is not a string.
func StringInside(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	return raw[1 : len(raw)-1], true
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// endString returns the index just past the string starting at s[i] == '"'.
// It looks at eight bytes at a time for a quote or a backslash (the
// strings of a stream chunk are short: a call to IndexByte for each, and
// counting the backslashes before every quote, cost more than the scan) and
// steps over each escape's next byte.
func endString(s string, i int) int {
	for i++; ; {
		for i+8 <= len(s) {
			w := load64(s, i)
			q := w ^ (ones * '"')
			b := w ^ (ones * '\\')
			// Each term flags its bytes exactly up to its first hit (a borrow
			// only flags bytes after one), so the lowest flag is the first.
			if m := (((q - ones) &^ q) | ((b - ones) &^ b)) & highs; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(s) {
			return len(s)
		}
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2
		default: // fewer than eight bytes were left
			i++
		}
	}
}

// nextStructural returns the index of the first quote, brace or bracket
// in s at or after i, or len(s), eight bytes at a time like endString.
func nextStructural(s string, i int) int {
	for i+8 <= len(s) {
		w := load64(s, i)
		q := w ^ (ones * '"')
		// Without bit 0x20, '{' and '}' are '[' and ']' (and only they are).
		u := w &^ (ones * 0x20)
		o := u ^ (ones * '[')
		c := u ^ (ones * ']')
		if m := (((q - ones) &^ q) | ((o - ones) &^ o) | ((c - ones) &^ c)) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '"', '{', '}', '[', ']':
			return i
		}
	}
	return len(s)
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// load64 is the eight bytes of s at i, little-endian (one load once
// compiled).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// endValue returns the index just past the value starting at s[i].
func endValue(s string, i int) int {
	switch s[i] {
	case '"':
		return endString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = endString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i = nextStructural(s, i+1)
		}
		return len(s)
	}
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
