package jsonvalid

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestValidJSON(t *testing.T) {
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	tests := []string{
		``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{,}`, `[1,]`, `[,1]`, `[1 2]`,
		`{"a":[1,{"b":null}],"c":"d"}`, `{"a":1}}`, `{"a":1`, `[[[]]`, `{"a":"b"]`, `["a"}`, `{1:2}`,
		`"x"`, `1`, `-0`, `-`, `01`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-1.5e10`, `.5`, `+1`, `0x1`,
		`true`, `tru`, `truee`, `nul`, `null `, ` false`, `{"a":true,"b":false,"c":null}`,
		`"a\"b"`, `"a\\"`, `"\u00e9\uD83D\uDE00"`, `"\u00g0"`, `"\x"`, `"\`, `"abc`, `"a` + "\x00" + `b"`,
		`"tab` + "\t" + `"`, "\"\x1f\"", "\"\x7f\"", `"é✓"`, "\"\xff\xfe\"", `"0123456789abcdef\"0123456789"`,
		`{"a":"0123456789abcdef0123456789abcdef"}` + "\n", "\r\n{}\r\n",
		benchString(600), string(outputLine(600)), string(outputLine(600)[:400]),
		deep, "[" + deep + "]",
	}
	for _, s := range tests {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.60q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

// TestObjectTail: ObjectTail(b) is json.Valid of an object start + b.
func TestObjectTail(t *testing.T) {
	for _, b := range []string{
		`"b":2}`, ` "b" : [1,{"c":"}"}] } `, `"b":2,"c":null}`, `}`, ``, `"b":2`, `"b":2,}`, `"b"}`,
		`2}`, `"b":2}}`, `"b":2} x`, `"b":"x\"}`, `"b":{"c":[}`, `,"b":2}`,
	} {
		for _, head := range []string{`{"a":1,`, ` { "a" : [ ] , `} {
			if got, want := ObjectTail([]byte(b)), json.Valid([]byte(head+b)); got != want {
				t.Errorf("ObjectTail(%q) = %v, json.Valid(%q) says %v", b, got, head+b, want)
			}
		}
	}
}

// FuzzObjectTail checks ObjectTail against encoding/json.Valid.
func FuzzObjectTail(f *testing.F) {
	for _, s := range []string{`"b":2}`, `}`, `"b":[1,{"c":"\u00e9"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ObjectTail(b), json.Valid(append([]byte(`{"a":1,`), b...)); got != want {
			t.Fatalf("ObjectTail(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

// outputLine is an output line of about size bytes, most of it answer text.
func outputLine(size int) []byte {
	head := `{"id":"llmrun_req_1","custom_id":"req-00000001","response":{"status_code":200,"request_id":"req_1","body":{"id":"chatcmpl-1","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"`
	tail := `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":96}}},"error":null,"llmrun":{"provider":"openai","model":"gpt-4o-mini","attempts":1,"latency_ms":812,"ttft_ms":201,"input_tokens":42,"output_tokens":96}}`
	fill := max(size-len(head)-len(tail), 0)
	return []byte(head + strings.Repeat("lorem ipsum ", fill/12+1)[:fill] + tail)
}

func benchString(n int) string {
	return `{"text":"` + strings.Repeat(`lorem \"ipsum\" \u00e9 `, n/20) + `"}`
}

// FuzzValidJSON checks Valid against encoding/json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\"y",true,null]}`, `"\u12ab"`, string(outputLine(200)), "[\"a\x00\"]", `{"a":-0.0E+1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

// BenchmarkValidJSON compares Valid with gjson.ValidBytes and json.Valid
// on a runner-shaped ~600-byte output line.
func BenchmarkValidJSON(b *testing.B) {
	l := outputLine(600)
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{{"Valid", Valid}, {"gjson", gjson.ValidBytes}, {"encoding-json", json.Valid}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(l)))
			for b.Loop() {
				if !c.valid(l) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// TestStringEnd: StringEnd finds a string's closing quote exactly when
// Valid accepts the string, for insides that end in an escape too.
func TestStringEnd(t *testing.T) {
	for _, in := range []string{
		"", "plain text", `a \"quote\"`, `tab\tand \u00e9`, "long enough to take the eight-byte path here",
		`a"b`, `trailing \`, `half \u00`, "ctl \x01", `bad \x`, `\\`, `\\\`, `12345678\`,
	} {
		want := Valid([]byte(`"` + in + `"`))
		n, ok := StringEnd([]byte(in + `"` + `,"rest":1}`))
		if got := ok && n == len(in); got != want {
			t.Errorf("StringEnd(%q) = %d, %v; Valid of it quoted %v", in, n, ok, want)
		}
	}
}
