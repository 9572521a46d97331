package openai

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// streamMembers are what a streamed request adds: without include_usage a
// stream carries no token counts.
const streamMembers = `"stream":true,"stream_options":{"include_usage":true}`

// prepareStream returns in with stream and stream_options.include_usage
// set. A body that names neither (the common case: a batch line's body
// has no stream member) gets them appended before its closing brace, the
// bytes sjson would write, with one copy and no parse of a path; other
// bodies go through sjson.
func prepareStream(in []byte) ([]byte, error) {
	if out, ok := appendStreamMembers(in); ok {
		return out, nil
	}
	out, err := sjson.SetBytes(in, "stream", true)
	if err == nil {
		out, err = sjson.SetBytes(out, "stream_options.include_usage", true)
	}
	return out, err
}

// appendStreamMembers appends streamMembers to in, a JSON object without
// stream or stream_options members; false when in is not one.
func appendStreamMembers(in []byte) ([]byte, bool) {
	end := lastNonSpace(in, len(in))
	if end < 0 || in[end] != '}' || len(in) == 0 || in[0] != '{' {
		return nil, false
	}
	if gjson.GetBytes(in, "stream").Exists() || gjson.GetBytes(in, "stream_options").Exists() {
		return nil, false
	}
	prev := lastNonSpace(in, end)
	out := make([]byte, 0, end+len(streamMembers)+2)
	out = append(out, in[:end]...)
	if prev > 0 { // "{}" takes no comma
		out = append(out, ',')
	}
	out = append(out, streamMembers...)
	return append(out, '}'), true
}

// lastNonSpace is the index of the last byte of b[:end] that is not JSON
// whitespace, or -1.
func lastNonSpace(b []byte, end int) int {
	for i := end - 1; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return i
		}
	}
	return -1
}
