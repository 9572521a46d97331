package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tidwall/sjson"
)

// TestPrepareStreamAsSjson: a streamed request's body is what the two
// sjson sets made of it, member for member, whether it had stream members
// already or not, and the append path copies (in is never written).
func TestPrepareStreamAsSjson(t *testing.T) {
	for _, in := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[]}` + "\n",
		`{"model":"m","messages":[] }`,
		`{}`,
		`{"model":"m","stream":false}`,
		`{"model":"m","stream_options":{"include_obfuscation":false}}`,
		`{"model":"m","stream_options":{"include_usage":false},"stream":true}`,
		`{"model":"m","metadata":{"stream":"x"}}`, // nested: not the top-level member
	} {
		want, err := sjson.SetBytes([]byte(in), "stream", true)
		if err == nil {
			want, err = sjson.SetBytes(want, "stream_options.include_usage", true)
		}
		if err != nil {
			t.Fatal(err)
		}
		buf := []byte(in)
		got, err := prepareStream(buf[:len(buf):len(buf)])
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if string(buf) != in {
			t.Fatalf("%s: input changed to %s", in, buf)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: not JSON: %s", in, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
	}
}

// TestPrepareStreamAppends: the common body gets the members appended in
// sjson's order, not re-encoded.
func TestPrepareStreamAppends(t *testing.T) {
	got, err := prepareStream([]byte(`{"model":"m","messages":[{"role":"user","content":"a\u00e9"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"a\u00e9"}],"stream":true,"stream_options":{"include_usage":true}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestPrepareStreamRefusesNonObject: what is not an object goes to
// sjson, which reports it, as before.
func TestPrepareStreamRefusesNonObject(t *testing.T) {
	if _, ok := appendStreamMembers([]byte(`[1,2]`)); ok {
		t.Error("an array took the append path")
	}
	if _, ok := appendStreamMembers([]byte(`  `)); ok {
		t.Error("blanks took the append path")
	}
}
