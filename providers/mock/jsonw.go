package mock

import (
	"strconv"

	"github.com/llmrun/llmrun/internal/jsonw"
)

// The mock writes its JSON by hand so the bytes (field order included) are
// exactly the documented shapes.

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// control characters, U+2028 and U+2029 are escaped; <, > and & are not.
func appendString(b []byte, s string) []byte { return jsonw.AppendString(b, s, false) }

// appendNullString appends s as a JSON string, or null when s is empty.
func appendNullString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }
