package providers

import (
	"testing"
	"unsafe"
)

// TestRawInside: a value cut from data is found one byte in from each
// end; a copy, a one-byte value or a value of other memory is not.
func TestRawInside(t *testing.T) {
	data := []byte(`{"text":"hello"}`)
	v := unsafe.String(&data[8], 7) // "hello" with its quotes
	if s, e := RawInside(data, v); s != 9 || e != 14 || string(data[s:e]) != "hello" {
		t.Errorf("RawInside = %d, %d", s, e)
	}
	for _, v := range []string{string(data[8:15]), unsafe.String(&data[8], 1)} {
		if s, e := RawInside(data, v); s != -1 || e != -1 {
			t.Errorf("RawInside(%q) = %d, %d, want -1, -1", v, s, e)
		}
	}
}
