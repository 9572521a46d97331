package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/internal/jsonvalid"
)

// collectIDs scans content as an output file and returns the ids of its
// well-formed lines; the first malformed one is a *CorruptError.
func collectIDs(t *testing.T, content string, chunk int) ([]string, scanResult, error) {
	t.Helper()
	var ids []string
	var bad *CorruptError
	res, err := scan(strings.NewReader(content), scanOpts{path: "f", needID: true, chunk: chunk, workers: 1 + chunk%3}, func(l *scanLine) error {
		if l.Bad != "" {
			bad = corrupt(bad, l, "f", "f")
		} else {
			ids = append(ids, string(l.ID))
		}
		return nil
	})
	if err == nil && bad != nil {
		err = bad
	}
	return ids, res, err
}

func TestLineID(t *testing.T) {
	tests := map[string]struct {
		line string
		id   string
		ok   bool
	}{
		"fast path":         {`{"custom_id":"req-1","x":1}`, "req-1", true},
		"only key":          {`{"custom_id":"a"}`, "a", true},
		"not first":         {`{"x":{"custom_id":"inner"},"custom_id":"outer"}`, "outer", true},
		"spaces":            {`{ "custom_id" : "a b" , "x" : 1 }`, "a b", true},
		"escaped":           {`{"custom_id":"a\"b\u00e9","x":1}`, "a\"bé", true},
		"quote in later":    {`{"custom_id":"a","b":"\""}`, "a", true},
		"number":            {`{"custom_id":17,"x":1}`, "17", true},
		"crlf":              {"{\"custom_id\":\"a\"}\r", "a", true},
		"empty id":          {`{"custom_id":"","x":1}`, "", false},
		"no id":             {`{"id":"a"}`, "", false},
		"null id":           {`{"custom_id":null}`, "", false},
		"array":             {`["custom_id"]`, "", false},
		"torn":              {`{"custom_id":"a","x`, "", false},
		"nested only":       {`{"x":{"custom_id":"a"}}`, "", false},
		"prefix then torn":  {`{"custom_id":"ab`, "", false},
		"utf8 id fast path": {`{"custom_id":"é✓","x":1}`, "é✓", true},
		"runner shape":      {`{"id":"req_1","custom_id":"a","response":{}}`, "a", true},
		"after a number":    {`{"id":"x","n":1,"custom_id":"a"}`, "a", true},
		"after many pairs":  {`{"a":"1","b":"2","c":"3","d":"4","custom_id":"e"}`, "e", true},
		"similar key":       {`{"custom_id_x":"a","custom_id":"b"}`, "b", true},
		"escape before":     {`{"id":"a\"b","custom_id":"c"}`, "c", true},
		"only other pairs":  {`{"id":"a","b":"c"}`, "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id, ok := lineID([]byte(tc.line))
			if ok != tc.ok || string(id) != tc.id {
				t.Errorf("lineID(%s) = %q, %v; want %q, %v", tc.line, id, ok, tc.id, tc.ok)
			}
		})
	}
}

func TestScanTornTail(t *testing.T) {
	good := lines(result("a"), result("b"))
	tests := map[string]struct {
		tail     string
		ids      []string
		tornLine int
		keep     int // bytes of tail before the tear that stay
	}{
		"no tear":              {"", []string{"a", "b"}, 0, 0},
		"trailing blank lines": {"\n  \n", []string{"a", "b"}, 0, 0},
		"mid-line":             {`{"custom_id":"c","response":{"sta`, []string{"a", "b"}, 3, 0},
		"missing newline only": {result("c"), []string{"a", "b"}, 3, 0},
		"half a UTF-8 rune":    {`{"custom_id":"c","text":"caf` + "\xc3", []string{"a", "b"}, 3, 0},
		"invalid JSON at EOF":  {`{"custom_id":"c","x":}` + "\n", []string{"a", "b"}, 3, 0},
		"NULs at EOF":          {"\x00\x00\x00\x00", []string{"a", "b"}, 3, 0},
		"garbage line at EOF":  {"garbage\n", []string{"a", "b"}, 3, 0},
		"garbage then blanks":  {"garbage\n\n\n", []string{"a", "b"}, 3, 0},
		"blank then torn":      {"\n" + `{"custom_id":"c"`, []string{"a", "b"}, 4, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			content := good + tc.tail
			for _, chunk := range []int{1, 7, 64, 4096} {
				ids, res, err := collectIDs(t, content, chunk)
				if err != nil {
					t.Fatalf("chunk %d: %v", chunk, err)
				}
				if !slices.Equal(ids, tc.ids) {
					t.Errorf("chunk %d: ids %q, want %q", chunk, ids, tc.ids)
				}
				if res.TornLine != tc.tornLine {
					t.Errorf("chunk %d: torn line %d, want %d", chunk, res.TornLine, tc.tornLine)
				}
				wantGood := int64(len(good) + tc.keep)
				if tc.tornLine == 0 {
					wantGood = int64(len(content))
				}
				if res.Good != wantGood || res.Size != int64(len(content)) {
					t.Errorf("chunk %d: good %d size %d, want %d %d", chunk, res.Good, res.Size, wantGood, len(content))
				}
			}
		})
	}
}

func TestScanCorruptMiddle(t *testing.T) {
	tests := map[string]struct {
		content string
		line    int
		reason  string
	}{
		"not JSON":          {lines(result("a"), "hello", result("b")), 2, "not valid JSON"},
		"no custom_id":      {lines(result("a"), result("b"), `{"id":"c"}`, result("d")), 3, `no "custom_id"`},
		"torn then more":    {lines(result("a"), `{"custom_id":"b","x`, result("c")), 2, "not valid JSON"},
		"after blank lines": {lines(result("a"), "", "", "[1]", "", result("b")), 4, "not a JSON object"},
		"first line":        {lines("{", result("a")), 1, "not valid JSON"},
		"500 bytes cut out": {cutMiddle(lines(sealed(result("a")), sealed(result("b")), sealed(result("c")), sealed(result("d")), sealed(result("e")), sealed(result("f"))), 200, 200+500), 2, "checksum mismatch: the line changed after it was written"},
		"NULs inside":       {lines(result("a"), strings.Replace(result("b"), "answer", "ans\x00\x00er", 1), result("c")), 2, "not valid JSON (it holds NUL bytes)"},
		"NULs in a value":   {lines(result("a"), strings.Replace(result("b"), `"attempts":1`, "\"attempts\":1\x00", 1), result("c")), 2, "not valid JSON (it holds NUL bytes)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, chunk := range []int{1, 5, 4096} {
				_, _, err := collectIDs(t, tc.content, chunk)
				var ce *CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("chunk %d: err %v, want *CorruptError", chunk, err)
				}
				wantOff := int64(0)
				for range tc.line - 1 {
					wantOff += int64(strings.IndexByte(tc.content[wantOff:], '\n') + 1)
				}
				if ce.Line != tc.line || ce.Reason != tc.reason || ce.Offset != wantOff || ce.Path != "f" {
					t.Errorf("chunk %d: got %+v, want line %d offset %d reason %q", chunk, ce, tc.line, wantOff, tc.reason)
				}
			}
		})
	}
}

// TestSealCatchesSplices: cutting bytes out of a file of answers joins one
// answer's start to another's end, and the spliced line is usually valid JSON
// (here, with custom_id "b" and the answer to "e"). Only the seal tells.
func TestSealCatchesSplices(t *testing.T) {
	var plain, withSeal []string
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		plain = append(plain, result(id))
		withSeal = append(withSeal, sealed(result(id)))
	}
	spliced := strings.Split(cutMiddle(lines(plain...), 200, 700), "\n")[1]
	if !jsonvalid.Valid([]byte(spliced)) || !strings.Contains(spliced, `"custom_id":"b"`) || !strings.Contains(spliced, "answer to e") {
		t.Fatalf("the unsealed splice %q was expected to pass as JSON", spliced)
	}
	spliced = strings.Split(cutMiddle(lines(withSeal...), 200, 700), "\n")[1]
	if got := checkLine([]byte(spliced), true); !strings.Contains(got, "checksum mismatch") {
		t.Fatalf("checkLine(sealed splice) = %q", got)
	}
	for _, l := range withSeal {
		if got := checkLine([]byte(l), true); got != "" || !jsonvalid.Valid([]byte(l)) || verifySeal([]byte(l)) != sealOK {
			t.Fatalf("a sealed line fails: %q %s", got, l)
		}
	}
	for in, want := range map[string]string{
		`{"a":{}}`:        `{"a":{"crc32c":"`,
		`{"a":{"b":1}}`:   `{"a":{"b":1,"crc32c":"`,
		`{"a":1}`:         `{"a":1}`, // last member not an object: unsealed
		`{"a":{"b":1} }`:  `{"a":{"b":1} }`,
		`{"a":[{"b":1}]}`: `{"a":[{"b":1}]}`,
	} {
		if got := sealed(in); !strings.HasPrefix(got, want) || !jsonvalid.Valid([]byte(got)) {
			t.Errorf("seal(%s) = %s", in, got)
		}
	}
}

// cutMiddle returns s without s[from:to], as a bad disk or a careless edit
// leaves it.
func cutMiddle(s string, from, to int) string { return s[:from] + s[to:] }

func TestScanLongLines(t *testing.T) {
	long := `{"custom_id":"big","text":"` + strings.Repeat("x", 3*scanChunk) + `"}`
	ids, res, err := collectIDs(t, lines(result("a"), long, result("b")), scanChunk)
	if err != nil || !slices.Equal(ids, []string{"a", "big", "b"}) || res.TornLine != 0 {
		t.Fatalf("ids %q res %+v err %v", ids, res, err)
	}
}

// scanAll records every line scan passes on, as "no@off:bad:id".
func scanAll(t *testing.T, data []byte, o scanOpts) ([]string, scanResult) {
	t.Helper()
	var got []string
	res, err := scan(bytes.NewReader(data), o, func(l *scanLine) error {
		got = append(got, fmt.Sprintf("%d@%d:%s:%q", l.No, l.Off, l.Bad, l.ID))
		return nil
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	return got, res
}

// FuzzScan checks scan's contract on arbitrary bytes: it never panics or
// fails on content; every chunk size and worker count sees the same lines;
// and the good prefix (what Open keeps after a repair) rescans to the same
// lines with no torn tail.
func FuzzScan(f *testing.F) {
	f.Add([]byte(lines(result("a"), result("b"))))
	f.Add([]byte(lines(result("a")) + `{"custom_id":"b`))
	f.Add([]byte(lines(result("a"), "x", result("b"))))
	f.Add([]byte("\n\n{\"custom_id\":1}\n\xc3"))
	f.Add([]byte(lines(result("a"), "[1]", "") + "  "))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, res := scanAll(t, data, scanOpts{path: "f", needID: true, chunk: 16, workers: 1})
		if res.Good > res.Size || res.Size != int64(len(data)) || len(want) != res.Lines || (res.TornLine == 0) != (res.Good == res.Size) {
			t.Fatalf("bad result %+v for %d bytes, %d lines", res, len(data), len(want))
		}
		for _, o := range []scanOpts{{chunk: 1, workers: 2}, {chunk: 7, workers: 3}, {}} {
			o.path, o.needID = "f", true
			got, res2 := scanAll(t, data, o)
			if !slices.Equal(got, want) || res2 != res {
				t.Fatalf("chunk %d workers %d: %q %+v, want %q %+v", o.chunk, o.workers, got, res2, want, res)
			}
		}
		// Without its torn tail, a malformed line that was followed only by
		// the tail is the last line, so a torn one itself.
		again, res2 := scanAll(t, data[:res.Good], scanOpts{path: "f", needID: true, chunk: 16, workers: 2})
		wantTorn := 0
		if n := len(want); n > 0 && res.TornLine != 0 && !strings.Contains(want[n-1], "::") {
			fmt.Sscanf(want[n-1], "%d@", &wantTorn)
			want = want[:n-1]
		}
		if !slices.Equal(again, want) || res2.TornLine != wantTorn {
			t.Fatalf("rescan of the good prefix: %q %+v, want %q", again, res2, want)
		}
	})
}
