package checkpoint

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
		benchString(600), string(benchLine(3, 600)), string(benchLine(3, 600)[:400]),
		deep, "[" + deep + "]",
	}
	for _, s := range tests {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.60q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

func benchString(n int) string {
	return `{"text":"` + strings.Repeat(`lorem \"ipsum\" \u00e9 `, n/20) + `"}`
}

// FuzzValidJSON checks validJSON against encoding/json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\"y",true,null]}`, `"\u12ab"`, string(benchLine(1, 200)), "[\"a\x00\"]", `{"a":-0.0E+1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

// BenchmarkValidJSON compares validJSON with gjson.ValidBytes and json.Valid
// on a runner-shaped ~600-byte output line.
func BenchmarkValidJSON(b *testing.B) {
	l := benchLine(1, 600)
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{{"validJSON", validJSON}, {"gjson", gjson.ValidBytes}, {"encoding-json", json.Valid}} {
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
