package export

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestExportTagColumns: the lines' tags become a tag_KEY column per key
// in CSV (empty where a line lacks the key) and a tags map in Parquet and
// JSONL.
func TestExportTagColumns(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	lines := answerLine("a", `{"choices":[{"message":{"content":"hi"}}]}`, `,"tags":{"team":"search","env":"prod"}`) + "\n" +
		answerLine("b", `{"choices":[{"message":{"content":"yo"}}]}`, `,"tags":{"team":"ads"}`) + "\n" +
		answerLine("c", `{"choices":[{"message":{"content":"no"}}]}`, "") + "\n"
	if err := os.WriteFile(out, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Output: out, Errors: filepath.Join(dir, "none.jsonl")}
	var buf bytes.Buffer
	w, _ := NewWriter("csv", &buf)
	if _, err := Export(o, w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(Columns), "tag_env", "tag_team"); !slices.Equal(recs[0], want) {
		t.Fatalf("header %v, want %v", recs[0], want)
	}
	n := len(Columns)
	for i, want := range [][2]string{{"prod", "search"}, {"", "ads"}, {"", ""}} {
		if got := [2]string{recs[i+1][n], recs[i+1][n+1]}; got != want {
			t.Errorf("row %d tags %v, want %v", i, got, want)
		}
	}
	buf.Reset()
	w, _ = NewWriter("parquet", &buf)
	if _, err := Export(o, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[Row](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Tags["team"] != "search" || rows[0].Tags["env"] != "prod" || rows[1].Tags["team"] != "ads" || len(rows[2].Tags) != 0 {
		t.Fatalf("parquet tags %v %v %v", rows[0].Tags, rows[1].Tags, rows[2].Tags)
	}
}
