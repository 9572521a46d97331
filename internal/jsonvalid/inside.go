package jsonvalid

// StringInside reports whether b is the inside of a JSON string: whether
// `"` + b + `"` is one valid JSON string (no unescaped quote, no control
// character, every escape whole). A stream decoder that knows a chunk's
// bytes around one string checks only that string's inside.
func StringInside(b []byte) bool {
	i, ok := str(b, 0)
	// str stops at a closing quote (ok), or fails at a bad byte or escape
	// before the end, or runs off the end, which for an inside is right.
	return !ok && i >= len(b)
}
