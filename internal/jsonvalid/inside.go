package jsonvalid

// StringEnd reports where the JSON string whose inside starts b ends:
// the index of its closing quote, and whether everything before it is a
// valid inside (no control character, every escape whole). A stream
// decoder that knows a chunk's bytes around a string checks only that
// string.
func StringEnd(b []byte) (int, bool) {
	i, ok := str(b, 0)
	if !ok {
		return 0, false
	}
	return i - 1, true
}
