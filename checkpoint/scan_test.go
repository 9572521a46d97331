package checkpoint

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func collectIDs(t *testing.T, content string, chunk int) ([]string, scanResult, error) {
	t.Helper()
	var ids []string
	res, err := scanBuf(strings.NewReader(content), "f", true, func(_ int, _, id []byte) error {
		ids = append(ids, string(id))
		return nil
	}, chunk)
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
		"not JSON":          {lines(result("a"), "hello", result("b")), 2, "not a JSON object"},
		"no custom_id":      {lines(result("a"), result("b"), `{"id":"c"}`, result("d")), 3, `no "custom_id"`},
		"torn then more":    {lines(result("a"), `{"custom_id":"b","x`, result("c")), 2, "not a JSON object"},
		"after blank lines": {lines(result("a"), "", "", "[1]", "", result("b")), 4, "not a JSON object"},
		"first line":        {lines("{", result("a")), 1, "not a JSON object"},
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

func TestScanLongLines(t *testing.T) {
	long := `{"custom_id":"big","text":"` + strings.Repeat("x", 3*scanChunk) + `"}`
	ids, res, err := collectIDs(t, lines(result("a"), long, result("b")), scanChunk)
	if err != nil || !slices.Equal(ids, []string{"a", "big", "b"}) || res.TornLine != 0 {
		t.Fatalf("ids %q res %+v err %v", ids, res, err)
	}
}

// FuzzScan checks scan's contract on arbitrary bytes: it never panics, and
// the good prefix (what Open keeps after a repair) rescans without error to a
// prefix of the same ids. (Only the last line is fully validated, so a line
// that passed the cheap check in the middle may be dropped once it becomes
// the last; the runner never writes such lines.)
func FuzzScan(f *testing.F) {
	f.Add([]byte(lines(result("a"), result("b"))))
	f.Add([]byte(lines(result("a")) + `{"custom_id":"b`))
	f.Add([]byte(lines(result("a"), "x", result("b"))))
	f.Add([]byte("\n\n{\"custom_id\":1}\n\xc3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ids [][]byte
		res, err := scanBuf(bytes.NewReader(data), "f", true, func(_ int, _, id []byte) error {
			ids = append(ids, bytes.Clone(id))
			return nil
		}, 16)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if res.Good > res.Size || res.Size != int64(len(data)) || len(ids) != res.Lines {
			t.Fatalf("bad result %+v for %d bytes, %d ids", res, len(data), len(ids))
		}
		var again [][]byte
		res2, err := scanBuf(bytes.NewReader(data[:res.Good]), "f", true, func(_ int, _, id []byte) error {
			again = append(again, bytes.Clone(id))
			return nil
		}, 16)
		if err != nil || len(again) > len(ids) || (res2.TornLine == 0) != (len(again) == len(ids)) {
			t.Fatalf("rescan of good prefix: %+v %v (%d ids, had %d)", res2, err, len(again), len(ids))
		}
		for i := range again {
			if !bytes.Equal(ids[i], again[i]) {
				t.Fatalf("id %d: %q vs %q", i, ids[i], again[i])
			}
		}
	})
}
