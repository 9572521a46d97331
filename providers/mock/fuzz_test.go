package mock

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"uo\\te", "\n\r\t\x00\x1f", "<&>", "\u2028\u2029", "héllo ☃", "\xff\xfe bad"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendString(%q) = %s: %v", s, b, err)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("round trip of %q gave %q", s, got)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"x"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}],"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add([]byte(`{"messages":null}`))
	f.Add([]byte(`{"model":"m","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}],"max_output_tokens":16}`))
	f.Add([]byte(`{"model":"e","input":[[1,2],[3]],"encoding_format":"base64","dimensions":4}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, d := range []dialect{openAI{}, anthropic{}, azure{deployment: "d"}, responses{}, embeddings{}} {
			req, e := d.parse(body)
			if (req == nil) == (e == nil) {
				t.Fatalf("parse(%q) = %v, %v", body, req, e)
			}
			if e != nil {
				if !json.Valid(d.errorBody(e, "req_x")) {
					t.Fatalf("error body for %q is not JSON: %s", body, d.errorBody(e, "req_x"))
				}
				continue
			}
			c := newCompletion(d, bodyHash(d.tag(), body), req, "req_x", 0)
			if !json.Valid(d.plainBody(c)) {
				t.Fatalf("plain body for %q is not JSON: %s", body, d.plainBody(c))
			}
		}
	})
}
