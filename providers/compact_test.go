package providers

import (
	"bytes"
	"encoding/json"
	"testing"
)

// compactRef is what encoding/json's Marshal writes for a valid
// json.RawMessage: compacted, then HTML-escaped.
func compactRef(raw []byte) []byte {
	var c, h bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return nil
	}
	json.HTMLEscape(&h, c.Bytes())
	return h.Bytes()
}

func TestAppendCompactJSONMatchesEncoding(t *testing.T) {
	for _, raw := range []string{
		`{"a":1}`,
		`{"id":"chatcmpl-1","choices":[{"message":{"content":"hi there"}}]}`,
		" {\n\t\"a\" : [ 1 , \"x y\" ] ,\r\n \"b\":null }\n",
		`{"a":"<b>&amp;</b>"}`,
		`{"a":"say \"<hi>\" \\","b":"\\"}`,
		`{"a":"\\\" x"}`,
		"{\"a\":\"line\u2028sep\u2029para\"}",
		"{\"a\":\"\u2027\u202a\u20ac\"}", // neighbours of U+2028, not escaped
		"{\"a\":\"\xff\xfe\xe2\x80\"}",
		`"just a string"`,
		`12.5e-3`,
		` null `,
		`[]`,
		`{"k":"\u003c"}`,
	} {
		want := compactRef([]byte(raw))
		got := AppendCompactJSON([]byte("prefix:"), []byte(raw))
		if !bytes.Equal(got, append([]byte("prefix:"), want...)) {
			t.Errorf("%q:\n got %s\nwant prefix:%s", raw, got, want)
		}
	}
}

func FuzzAppendCompactJSON(f *testing.F) {
	for _, s := range []string{`{"a": "<x>"}`, "[1,\n2]", "\"\u2028\"", `{"a":"\\\""}`, `"\xff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // the caller validates
		}
		if got, want := AppendCompactJSON(nil, raw), compactRef(raw); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", raw, got, want)
		}
	})
}
