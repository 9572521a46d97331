package providers

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// ParseBody parses an answer's body, read whole, without copying it (as
// gjson.ParseBytes does: a plain answer's size, every request): the
// strings of the results, and those taken from them (Response.Model,
// Response.Text), share b's memory. An answer's body is never modified
// once read, so they stay valid as long as they are used.
func ParseBody(b []byte) gjson.Result {
	return gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
}
