package providers

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

type member struct{ key, val string }

func members(obj string) (out []member) {
	EachMember(obj, func(k, v string) bool { out = append(out, member{k, v}); return true })
	return out
}

func TestEachMember(t *testing.T) {
	got := members(` { "a" : 1 , "b\"c":"x\"}{[", "d":{"e":[1,"]}",{}]}, "f":null,"g":-1.5e3 } `)
	want := []member{{`"a"`, `1`}, {`"b\"c"`, `"x\"}{["`}, {`"d"`, `{"e":[1,"]}",{}]}`}, {`"f"`, `null`}, {`"g"`, `-1.5e3`}}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %q, want %q", i, got[i], want[i])
		}
	}
	var n int
	EachMember(`{"a":1,"b":2}`, func(k, v string) bool { n++; return false })
	if n != 1 {
		t.Errorf("stop ignored: %d calls", n)
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"`, `{"a":`, `{"a":"x`, `{"a":[1,`, `"x"`} {
		members(bad) // must not panic
	}
}

// TestEachMemberWordScan: the eight-bytes-at-a-time scans find a quote,
// backslash, brace or bracket at every offset of a word and across words,
// and an escaped backslash before a closing quote does not escape it.
func TestEachMemberWordScan(t *testing.T) {
	for pad := range 20 {
		p := strings.Repeat("x", pad)
		for _, v := range []string{
			`"` + p + `\\"`,                        // an escaped backslash, then the close
			`"` + p + `\"` + p + `"`,               // an escaped quote in the middle
			`"` + p + `\\\"x"`,                     // three backslashes: the quote is escaped
			`{"` + p + `":[1,"` + p + `]"]}`,       // nesting after a run of plain bytes
			`{"k":"` + p + `}]{["}`,                // structural bytes inside a string
			`[{"a":"` + p + `"},["` + p + `"],{}]`, // arrays and objects side by side
		} {
			obj := `{"a":` + v + `,"` + p + `b":2}`
			if !gjson.Valid(obj) {
				t.Fatalf("test value %s is not JSON", obj)
			}
			got := members(obj)
			if len(got) != 2 || got[0].val != v || got[1] != (member{`"` + p + `b"`, `2`}) {
				t.Errorf("members(%s) = %q", obj, got)
			}
		}
	}
}

func TestStringInside(t *testing.T) {
	if s, ok := StringInside(`"a\nb"`); !ok || s != `a\nb` {
		t.Errorf("%q %v", s, ok)
	}
	for _, raw := range []string{`null`, `1`, `"`, ``, `{}`} {
		if _, ok := StringInside(raw); ok {
			t.Errorf("%q accepted", raw)
		}
	}
}

// FuzzEachMember checks the raw walkers against gjson on valid JSON, and
// that they never panic on anything else.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":{"b":[1,2,{"c":"\""}]},"d":"\\"}`, `[1,"a",{"b":null},[]]`, ` { } `, `{"a":"\u00e9"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := members(s)
		var elems []string
		EachElement(s, func(v string) bool { elems = append(elems, v); return true })
		if !gjson.Valid(s) {
			return
		}
		r := gjson.Parse(s)
		var want []member
		var wantElems []string
		switch {
		case r.IsObject():
			r.ForEach(func(k, v gjson.Result) bool { want = append(want, member{k.Raw, v.Raw}); return true })
		case r.IsArray():
			r.ForEach(func(_, v gjson.Result) bool { wantElems = append(wantElems, v.Raw); return true })
		}
		if len(got) != len(want) || len(elems) != len(wantElems) {
			t.Fatalf("got %q / %q, want %q / %q", got, elems, want, wantElems)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("member %d: got %q, want %q", i, got[i], want[i])
			}
		}
		for i := range wantElems {
			if elems[i] != wantElems[i] {
				t.Fatalf("element %d: got %q, want %q", i, elems[i], wantElems[i])
			}
		}
	})
}
