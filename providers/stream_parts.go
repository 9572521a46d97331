package providers

import (
	"slices"
	"strconv"
)

// Pieces the stream assemblers of the wire formats share: they rebuild a
// non-streamed answer from events, each in its own shape.

// MidStream is the failure of a stream whose event data could not be
// applied; the event is kept as the error's body.
func MidStream(msg string, data []byte) *Error {
	return &Error{Class: ClassMidStream, Message: msg, Body: append([]byte(nil), data...)}
}

// ElementIndex is the "index" member of s, one element of a chunk's
// choices or candidates, or missing when it has none that is a number.
func ElementIndex(s string, missing int) int {
	idx := missing
	EachMember(s, func(k, v string) bool {
		if k == `"index"` {
			if n, err := strconv.Atoi(v); err == nil {
				idx = n
			}
			return false
		}
		return true
	})
	return idx
}

// AppendByIndex appends the elements of list to b, comma-separated and in
// the order of their index, as a non-streamed answer lists them; the order
// of arrival breaks ties.
func AppendByIndex[T any](b []byte, list []*T, index func(*T) int, appendJSON func(*T, []byte) []byte) []byte {
	sorted := slices.Clone(list)
	slices.SortStableFunc(sorted, func(x, y *T) int { return index(x) - index(y) })
	for i, e := range sorted {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSON(e, b)
	}
	return b
}
