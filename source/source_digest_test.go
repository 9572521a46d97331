package source

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// bigInput writes n simple lines of about 200 bytes: several digest chunks.
func bigInput(t *testing.T, n int) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"r%05d","prompt":"%s"}`+"\n", i, strings.Repeat("x", 170))
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

func TestLeadingBOMIsSkipped(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(path, []byte("\xEF\xBB\xBF{\"custom_id\":\"a\",\"prompt\":\"x\"}\n{\"custom_id\":\"b\",\"prompt\":\"y\"}\n"), 0o644)
	total, ids := passes(t, &Source{Path: path, Parser: p})
	if total != 2 || strings.Join(ids, ",") != "a,b" {
		t.Fatalf("got %d, %v", total, ids)
	}
	// Only a leading one: a BOM inside the file is still an error.
	os.WriteFile(path, []byte("{\"prompt\":\"x\"}\n\xEF\xBB\xBF{\"prompt\":\"y\"}\n"), 0o644)
	if _, err := (&Source{Path: path, Parser: p}).Check(); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("BOM on line 2: err = %v", err)
	}
}

// An input that changes after the check is reported as changed, and no line
// the check did not read is ever handed on.
func TestInputChangedDuringTheRun(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	const n = 3000 // ~600 KB: ten digest chunks
	tests := map[string]struct {
		// change alters the file after `after` requests were handed on.
		after  int
		change func(t *testing.T, path string, data []byte)
	}{
		"truncated before the run": {
			after: 0,
			change: func(t *testing.T, path string, data []byte) {
				os.Truncate(path, int64(len(data)/2))
			},
		},
		"truncated mid-line during the run": {
			after: 10,
			change: func(t *testing.T, path string, data []byte) {
				os.Truncate(path, int64(len(data)/2)+7)
			},
		},
		"rewritten in place, same size and time": {
			after: 10,
			change: func(t *testing.T, path string, data []byte) {
				fi, _ := os.Stat(path)
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				// One prompt's letters change deep in the file.
				f.WriteAt([]byte("yyyy"), int64(len(data)*3/4))
				f.Close()
				os.Chtimes(path, fi.ModTime(), fi.ModTime())
			},
		},
		"appended to during the run": {
			after: 10,
			change: func(t *testing.T, path string, data []byte) {
				fi, _ := os.Stat(path)
				f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				f.WriteString(`{"custom_id":"new","prompt":"x"}` + "\n")
				f.Close()
				os.Chtimes(path, fi.ModTime(), fi.ModTime()) // only the bytes tell
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path, data := bigInput(t, n)
			src := &Source{Path: path, Parser: p}
			defer src.Close()
			if res, err := src.Check(); err != nil || res.Requests != n {
				t.Fatalf("check: %+v, %v", res, err)
			}
			if tc.after == 0 {
				tc.change(t, path, data)
			}
			var got []string
			err := src.Each(func(r *providers.Request) error {
				want := fmt.Sprintf("r%05d", len(got))
				if r.ID != want {
					t.Fatalf("handed on %s where the check read %s", r.ID, want)
				}
				got = append(got, r.ID)
				if len(got) == tc.after {
					tc.change(t, path, data)
				}
				return nil
			})
			var ce *InputChangedError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (after %d requests), want InputChangedError", err, len(got))
			}
			if !strings.Contains(err.Error(), "changed during the run") || (len(got) > 0 && ce.Line != len(got)) {
				t.Errorf("err = %v; %d requests handed on", err, len(got))
			}
			if len(got) >= n {
				t.Errorf("all %d requests handed on", len(got))
			}
		})
	}
	t.Run("unchanged input passes any number of times", func(t *testing.T) {
		path, _ := bigInput(t, n)
		src := &Source{Path: path, Parser: p}
		defer src.Close()
		if _, err := src.Check(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			k := 0
			if err := src.Each(func(*providers.Request) error { k++; return nil }); err != nil || k != n {
				t.Fatalf("each: %d, %v", k, err)
			}
		}
	})
}

// Equal id hashes are only suspects: the file is read again to tell a real
// repeat (reported with both lines, the first in file order) from a
// collision (accepted).
func TestDuplicateIDsConfirmedFromTheFile(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	collide := func(id string) uint64 { return uint64(len(id)) } // every id of one length collides
	t.Run("collisions only", func(t *testing.T) {
		path := writeInput(t, `{"custom_id":"a1","prompt":"x"}`, `{"custom_id":"b2","prompt":"x"}`, `{"custom_id":"c3","prompt":"x"}`)
		res, err := (&Source{Path: path, Parser: p, idHash: collide}).Check()
		if err != nil || res.Requests != 3 {
			t.Fatalf("res %+v, err %v", res, err)
		}
	})
	t.Run("real repeats among collisions", func(t *testing.T) {
		path := writeInput(t,
			`{"custom_id":"a1","prompt":"x"}`, `{"custom_id":"b2","prompt":"x"}`, `{"custom_id":"long-id","prompt":"x"}`,
			`{"custom_id":"c3","prompt":"x"}`, `{"custom_id":"b2","prompt":"y"}`, `{"custom_id":"a1","prompt":"z"}`)
		_, err := (&Source{Path: path, Parser: p, idHash: collide}).Check()
		var ie *InputError
		if !errors.As(err, &ie) || ie.Line != 5 || ie.FirstLine != 2 || !strings.Contains(err.Error(), `"b2"`) {
			t.Fatalf("err = %v, want b2 at lines 5 and 2", err)
		}
	})
	t.Run("line-N ids of lines without one", func(t *testing.T) {
		path := writeInput(t, `{"prompt":"x"}`, `{"custom_id":"line-1","prompt":"y"}`)
		_, err := (&Source{Path: path, Parser: p}).Check()
		if err == nil || !strings.Contains(err.Error(), `"line-1"`) || !strings.Contains(err.Error(), ":1)") {
			t.Fatalf("err = %v", err)
		}
	})
}
