package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendStringMatchesEncodingJSON compares both modes with the standard
// library's encoder on strings that exercise every escape.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	cases := []string{"", "plain", "a\"b\\c", "\b\f\n\r\t\x00\x1f", "<a & b>", "\u2028\u2029", "bad \xff utf8 \xc3", "héllo 世界"}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s, true); !bytes.Equal(got, want) {
			t.Errorf("html %q: got %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := AppendString(nil, s, false); !bytes.Equal(got, want) {
			t.Errorf("no html %q: got %s, want %s", s, got, want)
		}
	}
}
