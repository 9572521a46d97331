package export

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestParquetEmbeddingsNullForChat: the embeddings column is optional and
// null (definition level 0) in the rows of chat answers, as the README says,
// not an empty list; an embeddings row holds its vectors.
func TestParquetEmbeddingsNullForChat(t *testing.T) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Row](&buf)
	rows := []Row{{CustomID: "chat"}, {CustomID: "emb", Embeddings: [][]float64{{0.5, -2}}}}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	field, ok := f.Schema().Lookup("embeddings", "list", "element", "list", "element")
	if !ok {
		t.Fatalf("no embeddings leaf in %s", f.Schema())
	}
	if !f.Schema().Fields()[fieldIndex(f.Schema(), "embeddings")].Optional() {
		t.Errorf("embeddings is not optional: %s", f.Schema())
	}
	got := make([]parquet.Row, 2)
	n, _ := f.RowGroups()[0].Rows().ReadRows(got)
	if n != 2 {
		t.Fatalf("%d rows", n)
	}
	for i, want := range []bool{true, false} {
		null := false
		for _, v := range got[i] {
			if v.Column() == field.ColumnIndex {
				null = v.DefinitionLevel() == 0
			}
		}
		if null != want {
			t.Errorf("row %s: embeddings null %v, want %v", rows[i].CustomID, null, want)
		}
	}
}

func fieldIndex(s *parquet.Schema, name string) int {
	for i, f := range s.Fields() {
		if f.Name() == name {
			return i
		}
	}
	return -1
}
