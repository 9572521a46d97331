package canonjson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func canon(t testing.TB, in string) string {
	t.Helper()
	var c Canon
	out, err := c.Append(nil, []byte(in))
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	return string(out)
}

func TestCanonicalForms(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{ "b" : 1 , "a" : [ 1 , 2 ] }`, `{"a":[1,2],"b":1}`},
		{`{"model":"m","messages":[{"role":"user","content":"x"}]}`, `{"messages":[{"content":"x","role":"user"}],"model":"m"}`},
		{`"\u00e9"`, `"é"`},
		{`"\u00E9\/\u0041"`, `"é/A"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\u001F\u0008\u000a"`, `"\u001f\b\n"`},
		{`"\u001f"`, `"\u001f"`},
		{`"\uD800x"`, `"\ud800x"`},
		{`"\u2028"`, "\"\u2028\""},
		{`1.0`, `1`},
		{`-0`, `0`},
		{`-0.0`, `0`},
		{`1e2`, `100`},
		{`1E+2`, `100`},
		{`0.7`, `0.7`},
		{`1e21`, `1e+21`},
		{`1e-7`, `1e-7`},
		{`0.000001`, `0.000001`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`9007199254740993`, `9007199254740993`},
		{`1e400`, `1e400`},
		{`[true,false,null,{}, [] ]`, `[true,false,null,{},[]]`},
		// UTF-16 order: U+FF61 sorts after U+1F600 (a surrogate pair, D83D…).
		{`{"｡":1,"😀":2,"a":3}`, `{"a":3,"😀":2,"｡":1}`},
		{`{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":{"d":1,"c":2},"b":0}`, `{"a":{"c":2,"d":1},"b":0}`},
	} {
		if got := canon(t, tc.in); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestSameMeaningSameBytes(t *testing.T) {
	a := `{"model":"gpt-4o","messages":[{"role":"user","content":"café"}],"max_tokens":100,"temperature":1.0}`
	b := `{"max_tokens": 100, "messages": [{"content": "caf\u00e9", "role": "user"}], "model": "gpt-4o", "temperature": 1}`
	if ca, cb := canon(t, a), canon(t, b); ca != cb {
		t.Fatalf("\n%s\n%s", ca, cb)
	}
	if canon(t, a) == canon(t, `{"model":"gpt-4o","messages":[{"role":"user","content":"cafe"}],"max_tokens":100,"temperature":1.0}`) {
		t.Fatal("an edited prompt canonicalised to the same bytes")
	}
}

func TestCanonicalDetected(t *testing.T) {
	var c Canon
	for in, want := range map[string]bool{
		`{"a":1,"b":[1,"x"]}`: true,
		`{"b":1,"a":2}`:       false,
		`{"a":1, "b":2}`:      false,
		`{"a":1.0}`:           false,
		`"\u00e9"`:            false,
		`{"a":1,"a":2}`:       true, // duplicates stay, in order
		`"\u001f"`:            true,
	} {
		if got := c.Canonical([]byte(in)); got != want {
			t.Errorf("Canonical(%s) = %v", in, got)
		}
	}
}

func TestInvalid(t *testing.T) {
	var c Canon
	for _, in := range []string{``, `{`, `{"a"}`, `[1,]`, `"x`, `01`, `1.`, `-`, `tru`, `{"a":1}x`, "\"\x01\"", `"\x"`, `"\u12"`} {
		var buf bytes.Buffer
		if err := c.Write(&buf, []byte(in)); err == nil || buf.Len() != 0 {
			t.Errorf("%q: err %v, wrote %q", in, err, buf.String())
		}
	}
}

// checkRoundTrip asserts the properties a fingerprint rests on for any
// valid input: canonicalising is idempotent and recognises its own output,
// and it agrees with encoding/json where that is exact (no numbers, whose
// integers encoding/json would round through float64).
func checkRoundTrip(t *testing.T, in []byte) {
	var c Canon
	out, err := c.Append(nil, in)
	if valid := json.Valid(in); (err == nil) != valid {
		t.Fatalf("%q: err %v, json.Valid %v", in, err, valid)
	}
	if err != nil {
		return
	}
	again, err := c.Append(nil, out)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("not idempotent: %q → %q → %q (%v)", in, out, again, err)
	}
	if !c.Canonical(out) {
		t.Fatalf("own output %q not recognised as canonical", out)
	}
	var v1, v2 any
	if err := json.Unmarshal(in, &v1); err != nil {
		return
	}
	if err := json.Unmarshal(out, &v2); err != nil {
		t.Fatalf("output %q does not parse: %v", out, err)
	}
	if !bytes.ContainsAny(in, "0123456789") && !bytes.Contains(in, []byte(`\u`)) && !hasDupKeys(in) {
		e1, _ := json.Marshal(v1)
		e2, _ := json.Marshal(v2)
		if !bytes.Equal(e1, e2) {
			t.Fatalf("meaning changed: %q → %q", in, out)
		}
	}
}

// hasDupKeys reports a repeated key in some object (encoding/json keeps the
// last, canonjson keeps both).
func hasDupKeys(in []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(in))
	var stack []map[string]bool
	expectKey := []bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = append(expectKey, true)
				continue
			case '[':
				stack = append(stack, nil)
				expectKey = append(expectKey, false)
				continue
			default:
				stack, expectKey = stack[:len(stack)-1], expectKey[:len(expectKey)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1] != nil && expectKey[n-1] {
				if stack[n-1][v] {
					return true
				}
				stack[n-1][v] = true
				expectKey[n-1] = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1] != nil {
			expectKey[n-1] = true
		}
	}
}

func FuzzCanon(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1,2.50,-0,"\u00e9"]}`, `"\ud83d\ude00\ud800"`, `{"😀":1,"｡":2}`,
		`[1e21,1e-7,123456789012345678901]`, `{ "a" : { "c" : null , "b" : true } }`, `"\/\b\f"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkRoundTrip)
}

func BenchmarkCanon(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Tell me one fact about the number 12345, in two sentences, for a curious reader."}],"max_tokens":200,"temperature":0.7}`)
	var c Canon
	var sink appender
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		sink.b = sink.b[:0]
		c.Write(&sink, body)
	}
}

// TestPlainDecimalAgreesWithFormatting: every decimal the fast path takes
// as canonical is what ECMAScript formatting prints for it.
func TestPlainDecimalAgreesWithFormatting(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 8))
	for range 200000 {
		ip := strconv.Itoa(rng.IntN(1000000))
		if rng.IntN(3) == 0 {
			ip = "0"
		}
		frac := strconv.FormatUint(rng.Uint64()>>uint(rng.IntN(64)), 10)
		frac = strings.Repeat("0", rng.IntN(8)) + frac
		frac = frac[:1+rng.IntN(len(frac))]
		lit := ip + "." + frac
		if !plainDecimal([]byte(ip), []byte(frac)) {
			continue
		}
		if f, ok := formatNumber(nil, []byte(lit)); !ok || string(f) != lit {
			t.Fatalf("%s taken as canonical, formats as %s", lit, f)
		}
	}
}
