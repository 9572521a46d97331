package source

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// writeLines writes n simple lines (about 90 bytes each) to a file in dir.
func writeLines(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path := filepath.Join(dir, "in.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		fmt.Fprintf(w, `{"custom_id":"request-%08d","prompt":"Tell me one fact about the number %d."}`+"\n", i, i)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkCheck1M is the check pass over 1M lines: time, allocation, and
// the heap it keeps while it scans (measured after a GC at the end of the
// scan, when everything per request it keeps is still live, plus the id
// hashes it keeps outside the heap), in total and per request.
func BenchmarkCheck1M(b *testing.B) {
	const n = 1_000_000
	path := writeLines(b, b.TempDir(), n)
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	var retained int64
	b.ReportAllocs()
	for b.Loop() {
		var base runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&base)
		src := &Source{Path: path, Parser: p}
		src.afterScan = func(offHeap int) {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			retained = int64(m.HeapAlloc) - int64(base.HeapAlloc) + int64(offHeap)
		}
		res, err := src.Check()
		if err != nil || res.Requests != n {
			b.Fatalf("%+v %v", res, err)
		}
		src.Close()
	}
	b.ReportMetric(float64(retained)/(1<<20), "retained-MiB")
	b.ReportMetric(float64(retained)/n, "retained-B/req")
}
