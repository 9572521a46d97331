package telemetry

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestCloseMsg: a message of any length, opened with one byte reserved
// for its length or two, ends as protowire writes it, inside another.
func TestCloseMsg(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 70000} {
		content := bytes.Repeat([]byte{0x80}, n) // 0x80s: nothing a length check could mistake
		inner := protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), content)
		want := protowire.AppendBytes(protowire.AppendTag([]byte("x"), 2, protowire.BytesType), inner)
		for name, open := range map[string]func([]byte, protowire.Number) ([]byte, int){"openMsg": openMsg, "openLong": openLong} {
			b, outer := openMsg([]byte("x"), 2)
			b, s := open(b, 9)
			b = closeMsg(closeMsg(append(b, content...), s), outer)
			if !bytes.Equal(b, want) {
				t.Errorf("%s, %d bytes: %x… want %x…", name, n, b[:min(len(b), 8)], want[:min(len(want), 8)])
			}
		}
	}
}
