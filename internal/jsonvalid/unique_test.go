package jsonvalid

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestDuplicateKey(t *testing.T) {
	for _, tc := range []struct{ in, dup string }{
		{`{"custom_id":"a","custom_id":"b"}`, "custom_id"},
		{`{"custom_id":"a","body":{"model":"m","max_tokens":1,"model":"n"}}`, "body.model"},
		{`{"a":[{"role":"u","x":1},{"role":"u","role":"v"}]}`, "a[].role"},
		{`{"a":{"b":{"c":1}},"d":{"c":1},"c":2}`, ""},
		{`{"k\u0061":1,"ka":2}`, "ka"},
		{`[{"x":1},{"x":1,"x":2}]`, "[].x"},
		{`{"a":1} `, ""},
		{`{}`, ""},
		{`"str"`, ""},
		{`{"a":{},"b":[],"a":0}`, "a"},
	} {
		dup, ok := DuplicateKey([]byte(tc.in))
		if !ok || dup != tc.dup {
			t.Errorf("DuplicateKey(%s) = %q, %v; want %q", tc.in, dup, ok, tc.dup)
		}
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	if dup, ok := DuplicateKey([]byte(b.String() + "}")); !ok || dup != "" {
		t.Fatalf("100 distinct keys: %q %v", dup, ok)
	}
	if dup, ok := DuplicateKey([]byte(b.String() + `,"kxxxxx":2}`)); !ok || dup != "kxxxxx" {
		t.Fatalf("100 keys and a repeat: %q %v", dup, ok)
	}
	for _, bad := range []string{`{"a":1,}`, `{"a":1`, `{"a" 1}`, `[1,]`, `{"a":1}x`, ``, `{"\x":1}`} {
		if _, ok := DuplicateKey([]byte(bad)); ok {
			t.Errorf("DuplicateKey(%q) ok", bad)
		}
	}
}

// hasDup is the reference: encoding/json's tokens, keys per object.
func hasDup(b []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	type obj struct {
		keys  map[string]bool
		isObj bool
		want  bool // the next string token is a key
	}
	var stack []*obj
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return false
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.isObj {
					top.want = true
				}
				stack = append(stack, &obj{keys: map[string]bool{}, isObj: d == '{', want: d == '{'})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].isObj {
					stack[len(stack)-1].want = true
				}
			}
			continue
		}
		if top != nil && top.isObj {
			if top.want {
				k := tok.(string)
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.want = false
			} else {
				top.want = true
			}
		}
	}
}

func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"y":0,"y":`, `{"":"","":0}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`, `{"a":"\u0062","b":1}`, `{"x":[1,{"y":2,"y":3}]}`, `{}`, `1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dup, ok := DuplicateKey(b)
		if ok != json.Valid(b) {
			t.Fatalf("DuplicateKey(%q) ok = %v, json.Valid = %v", b, ok, !ok)
		}
		if ok && (dup != "") != hasDup(b) {
			t.Fatalf("DuplicateKey(%q) = %q, reference says duplicate: %v", b, dup, hasDup(b))
		}
	})
}

// TestDuplicateKeyAllocatesNothing: the check pass runs it on every line.
func TestDuplicateKeyAllocatesNothing(t *testing.T) {
	line := []byte(`{"custom_id":"request-1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"Tell me one fact."}],"max_tokens":5}}`)
	if n := testing.AllocsPerRun(100, func() { DuplicateKey(line) }); n != 0 {
		t.Fatalf("%v allocations a line", n)
	}
}

func BenchmarkDuplicateKey(b *testing.B) {
	line := []byte(`{"custom_id":"request-00000001","prompt":"Tell me one fact about the number 1."}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		DuplicateKey(line)
	}
}

func BenchmarkValidBaseline(b *testing.B) {
	line := []byte(`{"custom_id":"request-00000001","prompt":"Tell me one fact about the number 1."}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		Valid(line)
	}
}
