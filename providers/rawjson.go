package providers

import "strings"

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
	i++
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
// It jumps from quote to quote (IndexByte is vectorised) and counts the
// backslashes before each: an odd count means the quote is escaped.
func endString(s string, i int) int {
	for i++; i < len(s); {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return len(s)
		}
		i += q
		bs := 0
		for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
			bs++
		}
		i++
		if bs%2 == 0 {
			return i
		}
	}
	return len(s)
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
			i++
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
