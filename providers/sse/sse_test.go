package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ name, data string }

// decodeAll runs d to the end and copies every event out (Event slices are
// only valid until the next Next).
func decodeAll(d *Decoder) ([]ev, error) {
	var out []ev
	for d.Next() {
		e := d.Event()
		out = append(out, ev{string(e.Name), string(e.Data)})
	}
	return out, d.Err()
}

func equalEvents(a, b []ev) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDecoder(t *testing.T) {
	long := strings.Repeat("x", 1<<20+17) // longer than any bufio buffer
	tests := map[string]struct {
		in   string
		want []ev
	}{
		"empty":                              {"", nil},
		"data only":                          {"data: {\"a\":1}\n\n", []ev{{"", `{"a":1}`}}},
		"event and data":                     {"event: ping\ndata: {}\n\n", []ev{{"ping", "{}"}}},
		"no space":                           {"event:x\ndata:y\n\n", []ev{{"x", "y"}}},
		"only one space cut":                 {"data:  two\n\n", []ev{{"", " two"}}},
		"value with colons":                  {"data: a:b: c\n\n", []ev{{"", "a:b: c"}}},
		"multi-line data":                    {"data: a\ndata: b\ndata:\ndata: c\n\n", []ev{{"", "a\nb\n\nc"}}},
		"empty data field":                   {"data\n\n", []ev{{"", ""}}},
		"comments ignored":                   {": keep-alive\n:\ndata: x\n: mid\n\n", []ev{{"", "x"}}},
		"id retry ignored":                   {"id: 7\nretry: 1000\ndata: x\n\n", []ev{{"", "x"}}},
		"unknown field":                      {"foo: bar\ndata: x\n\n", []ev{{"", "x"}}},
		"only id is no event":                {"id: 1\n\ndata: x\n\n", []ev{{"", "x"}}},
		"crlf":                               {"event: a\r\ndata: b\r\n\r\nevent: c\r\ndata: d\r\n\r\n", []ev{{"a", "b"}, {"c", "d"}}},
		"mixed line ends":                    {"data: a\r\ndata: b\n\r\n", []ev{{"", "a\nb"}}},
		"lone cr is not a line end":          {"data: a\rb\n\n", []ev{{"", "a\rb"}}},
		"final event without blank line":     {"data: a\n\ndata: b\n", []ev{{"", "a"}, {"", "b"}}},
		"final line without newline":         {"event: e\ndata: b", []ev{{"e", "b"}}},
		"final crlf line without blank":      {"data: b\r\n", []ev{{"", "b"}}},
		"bare blank lines skipped":           {"\n\n\r\n\ndata: a\n\n\n\n\ndata: b\n\n\n", []ev{{"", "a"}, {"", "b"}}},
		"name without data dispatched":       {"event: message_stop\n\n", []ev{{"message_stop", ""}}},
		"last event name wins":               {"event: a\nevent: b\ndata: x\n\n", []ev{{"b", "x"}}},
		"name does not leak into next event": {"event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1"}, {"", "2"}}},
		"bom stripped":                       {"\xEF\xBB\xBFdata: x\n\n", []ev{{"", "x"}}},
		"bom only at start":                  {"data: \xEF\xBB\xBFx\n\n", []ev{{"", "\xEF\xBB\xBFx"}}},
		"1 MiB line":                         {"data: " + long + "\n\n", []ev{{"", long}}},
		"1 MiB line crlf":                    {"event: big\r\ndata: " + long + "\r\n\r\n", []ev{{"big", long}}},
		"1 MiB line at eof":                  {"data: " + long, []ev{{"", long}}},
		"1 MiB line then short":              {"data: " + long + "\ndata: z\n\ndata: y\n\n", []ev{{"", long + "\nz"}, {"", "y"}}},
		"1 MiB comment":                      {":" + long + "\ndata: x\n\n", []ev{{"", "x"}}},
		"openai done":                        {"data: {\"x\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"x":1}`}, {"", "[DONE]"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			readers := map[string]func() io.Reader{
				"whole":    func() io.Reader { return strings.NewReader(tc.in) },
				"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(tc.in)) },
				"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(tc.in)) },
			}
			if len(tc.in) > 1<<16 {
				delete(readers, "one byte") // correct but slow under -race
			}
			for rname, mk := range readers {
				for _, size := range []int{16, 16 << 10} {
					got, err := decodeAll(newDecoderSize(mk(), size))
					if err != nil {
						t.Fatalf("%s/%d: Err() = %v", rname, size, err)
					}
					if !equalEvents(got, tc.want) {
						t.Fatalf("%s/%d: got %s, want %s", rname, size, clip(got), clip(tc.want))
					}
				}
			}
		})
	}
}

// clip keeps failure messages readable when events are a megabyte long.
func clip(evs []ev) string {
	var b strings.Builder
	for _, e := range evs {
		d := e.data
		if len(d) > 40 {
			d = d[:20] + "…" + d[len(d)-20:]
		}
		b.WriteString("{" + e.name + "|" + d + "}")
	}
	return b.String()
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: partial\n"), iotest.ErrReader(boom))
	d := NewDecoder(r)
	got, err := decodeAll(d)
	if !errors.Is(err, boom) {
		t.Fatalf("Err() = %v, want boom", err)
	}
	// The partial event is not dispatched: a broken transport is not a clean end.
	if want := []ev{{"", "a"}}; !equalEvents(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if d.Next() {
		t.Fatal("Next after error returned true")
	}
}

func TestDecoderNextAfterEOF(t *testing.T) {
	d := NewDecoder(strings.NewReader("data: a"))
	if !d.Next() || string(d.Event().Data) != "a" {
		t.Fatal("want the unterminated event")
	}
	for range 3 {
		if d.Next() {
			t.Fatal("Next after EOF returned true")
		}
	}
	if d.Err() != nil {
		t.Fatalf("Err() = %v at clean EOF", d.Err())
	}
}

// TestDecoderSteadyStateAllocs pins the hot-path promise: once buffers have
// grown, decoding an event allocates nothing.
func TestDecoderSteadyStateAllocs(t *testing.T) {
	one := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
	r := &repeatReader{chunk: []byte(one)}
	d := NewDecoder(r)
	for range 100 { // warm up
		d.Next()
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if !d.Next() {
			t.Fatal("stream ended")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per event, want 0", allocs)
	}
}

// TestDecoderRelease: a released decoder reports no more events and an
// error, its last event intact; a second Release is harmless; decoders made
// after a Release (which may get its reader) and decoders alive at the same
// time each decode their own stream, however long its lines were.
func TestDecoderRelease(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // past the 16 KiB reader
	d := NewDecoder(strings.NewReader("event: a\ndata: " + long + "\n\ndata: more\n\n"))
	if !d.Next() || string(d.Event().Name) != "a" || string(d.Event().Data) != long {
		t.Fatal("first event of the long stream")
	}
	kept := d.Event().Data
	d.Release()
	if d.Next() || !errors.Is(d.Err(), errReleased) {
		t.Fatalf("after Release: Next true or Err %v", d.Err())
	}
	d.Release()
	other := NewDecoder(strings.NewReader("data: " + strings.Repeat("y", 1000) + "\n\n"))
	for other.Next() {
	}
	other.Release()
	if string(kept) != long {
		t.Fatal("a released decoder's last event changed")
	}
	for i := range 50 {
		streams := []string{"event: x\ndata: one\ndata: two\n\n", "data: {\"n\":" + strings.Repeat("7", i) + "}\n\n"}
		var ds []*Decoder
		for _, s := range streams {
			ds = append(ds, NewDecoder(strings.NewReader(s)))
		}
		for j, d := range ds {
			var got []ev
			for d.Next() {
				got = append(got, ev{string(d.Event().Name), string(d.Event().Data)})
			}
			if want := refDecode(streams[j]); !equalEvents(got, want) || d.Err() != nil {
				t.Fatalf("round %d stream %d: got %q want %q (err %v)", i, j, got, want, d.Err())
			}
		}
		for _, d := range ds {
			d.Release()
		}
	}
}

// BenchmarkDecoderPerStream is a run's pattern: a short stream per
// request, each with its own decoder. With Release the decoder's 16 KiB
// reader is reused: what is left is the Decoder and its event buffer.
func BenchmarkDecoderPerStream(b *testing.B) {
	stream := strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"abcd\"}}]}\n\n", 20) + "data: [DONE]\n\n"
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder(strings.NewReader(stream))
		for d.Next() {
		}
		d.Release()
	}
}

// repeatReader serves chunk forever.
type repeatReader struct {
	chunk []byte
	off   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.chunk[r.off:])
		n += c
		r.off = (r.off + c) % len(r.chunk)
	}
	return n, nil
}

// refDecode is the decoder's specification written the slow, obvious way:
// split on LF, strip one CR, apply the field rules.
func refDecode(s string) []ev {
	s = strings.TrimPrefix(s, bom)
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the text after the last LF is not a line
	}
	var out []ev
	var name, data string
	hasName, hasData := false, false
	flush := func() {
		if hasName || hasData {
			out = append(out, ev{name, data})
		}
		name, data, hasName, hasData = "", "", false, false
	}
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		switch {
		case l == "":
			flush()
		case l[0] == ':':
		default:
			f, v, _ := strings.Cut(l, ":")
			v = strings.TrimPrefix(v, " ")
			switch f {
			case "event":
				name, hasName = v, v != ""
			case "data":
				if hasData {
					data += "\n"
				}
				data += v
				hasData = true
			}
		}
	}
	flush()
	return out
}

// encode writes events back as SSE. CRLF line ends make values that end in
// CR survive the round trip.
func encode(evs []ev) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		if e.name != "" {
			b.WriteString("event: " + e.name + "\r\n")
		}
		if e.data != "" || e.name == "" {
			for l := range strings.SplitSeq(e.data, "\n") {
				b.WriteString("data: " + l + "\r\n")
			}
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		"data: x\n\n",
		"event: a\ndata: b\n\n",
		"event: a\r\ndata: b\r\n\r\n",
		"data: a\ndata: b\n\n:c\n\nid: 1\nretry: 2\ndata: x",
		"\xEF\xBB\xBFevent:x\nevent:y\ndata\n\n\n\n",
		"data:  \r\r\n\r\n",
		strings.Repeat("data: 0123456789\n", 5) + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want := refDecode(string(in))
		for _, size := range []int{16, 16 << 10} {
			got, err := decodeAll(newDecoderSize(iotest.HalfReader(bytes.NewReader(in)), size))
			if err != nil {
				t.Fatalf("Err() = %v", err)
			}
			if !equalEvents(got, want) {
				t.Fatalf("size %d: decoder %q, reference %q", size, got, want)
			}
		}
		// Re-encoding the events and decoding again is the identity.
		again, err := decodeAll(NewDecoder(bytes.NewReader(encode(want))))
		if err != nil || !equalEvents(again, want) {
			t.Fatalf("round trip: %q (err %v), want %q", again, err, want)
		}
	})
}
