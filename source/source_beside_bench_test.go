package source

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// BenchmarkCheck1MBatchLines is BenchmarkCheck1M over OpenAI batch lines
// (about 170 bytes each), the path that reads a shape's request member.
func BenchmarkCheck1MBatchLines(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "in.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		fmt.Fprintf(w, `{"custom_id":"request-%08d","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"Tell me one fact about %d."}]}}`+"\n", i, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	p := Parser{Format: providers.FormatOpenAI}
	b.ReportAllocs()
	for b.Loop() {
		src := &Source{Path: path, Parser: p}
		if res, err := src.Check(); err != nil || res.Requests != n {
			b.Fatalf("%+v %v", res, err)
		}
		src.Close()
	}
}
