package checkpoint

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// benchLine returns a realistic output line of about size bytes for request i,
// shaped as the runner writes it (runner.Line: "id", then "custom_id").
func benchLine(i, size int) []byte {
	head := fmt.Sprintf(`{"id":"%x","custom_id":"req-%08d","response":{"status_code":200,"request_id":"req_%d","body":{"id":"chatcmpl-%d","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"`, i*7919, i, i, i)
	tail := `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":96}}},"error":null,"llmrun":{"provider":"openai","model":"gpt-4o-mini","attempts":1,"latency_ms":812,"ttft_ms":201,"input_tokens":42,"output_tokens":96}}`
	fill := max(size-len(head)-len(tail), 0)
	return []byte(head + strings.Repeat("lorem ipsum ", fill/12+1)[:fill] + tail)
}

// BenchmarkAppendBatch measures AppendResult at FsyncBatch with ~500-byte
// lines on a real file: one write(2) per line, group-committed fsyncs.
func BenchmarkAppendBatch(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(Options{Output: filepath.Join(dir, "x.out.jsonl"), Errors: filepath.Join(dir, "x.errors.jsonl")})
	if err != nil {
		b.Fatal(err)
	}
	const pool = 1 << 16
	lines := make([][]byte, pool)
	ids := make([]string, pool)
	for i := range lines {
		lines[i] = benchLine(i, 500)
		id, _ := lineID(lines[i])
		ids[i] = string(id)
	}
	b.SetBytes(int64(len(lines[0]) + 1))
	n := 0
	for b.Loop() {
		if n == pool { // ids repeat after pool appends: start a fresh store
			b.StopTimer()
			s.Close()
			os.Remove(filepath.Join(dir, "x.out.jsonl"))
			if s, err = Open(Options{Output: filepath.Join(dir, "x.out.jsonl"), Errors: filepath.Join(dir, "x.errors.jsonl")}); err != nil {
				b.Fatal(err)
			}
			n = 0
			b.StartTimer()
		}
		if err := s.AppendResult(ids[n], lines[n]); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "results/s")
}

// BenchmarkScan1M measures Open (lock, scan, state file) of an output with
// 1M lines of ~600 bytes (about 600 MB), generated once: "sealed" as the
// Store writes them (checked by checksum), "unsealed" as an older llmrun
// wrote them (validated as JSON).
func BenchmarkScan1M(b *testing.B) {
	for _, sealLines := range []bool{true, false} {
		name := "unsealed"
		if sealLines {
			name = "sealed"
		}
		b.Run(name, func(b *testing.B) { benchScan(b, 1_000_000, sealLines) })
	}
}

func benchScan(b *testing.B, n int, sealLines bool) {
	dir := b.TempDir()
	o := Options{Output: filepath.Join(dir, "x.out.jsonl"), Errors: filepath.Join(dir, "x.errors.jsonl")}
	f, err := os.Create(o.Output)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var size int64
	var buf []byte
	for i := range n {
		buf = benchLine(i, 600)
		if sealLines {
			buf = seal(nil, buf, Fingerprint(i+1))
		}
		size += int64(len(buf) + 1)
		w.Write(buf)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.SetBytes(size)
	b.ResetTimer()
	var kept, heap float64
	for b.Loop() {
		var before runtime.MemStats
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		s, err := Open(o)
		if err != nil {
			b.Fatal(err)
		}
		if d, _ := s.Counts(); d != n {
			b.Fatalf("done %d", d)
		}
		b.StopTimer()
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept = float64(s.IndexBytes()) / float64(n)
		heap = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1000, "ms/open")
	b.ReportMetric(kept, "index-bytes/id")
	b.ReportMetric(heap, "heap-bytes/id")
}

// BenchmarkLineID compares where custom_id sits in a ~600-byte line: second
// (the runner's shape) and first take the fast path; last takes gjson.
func BenchmarkLineID(b *testing.B) {
	second := benchLine(1, 600)
	_, rest, _ := strings.Cut(string(second), `"custom_id":"req-00000001",`)
	first := []byte(`{"custom_id":"req-00000001",` + rest)
	last := []byte(strings.TrimSuffix(`{`+rest, "}") + `,"custom_id":"req-00000001"}`)
	for _, c := range []struct {
		name string
		line []byte
	}{{"second", second}, {"first", first}, {"last", last}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if id, ok := lineID(c.line); !ok || string(id) != "req-00000001" {
					b.Fatalf("%q %v", id, ok)
				}
			}
		})
	}
}

// BenchmarkConfirm measures what a rerun pays per id to confirm its skips
// against the output's lines (index lookup, then the line's custom_id read
// through lineReader's window), on 200,000 lines of ~600 bytes: SkipAll
// with the ids in file order, and jittered as a run at --concurrency 512
// writes them (each id up to 512 lines from its place); Classify in the
// jittered order.
func BenchmarkConfirm(b *testing.B) {
	const n = 200_000
	dir := b.TempDir()
	o := Options{Output: filepath.Join(dir, "x.out.jsonl"), Errors: filepath.Join(dir, "x.errors.jsonl")}
	f, err := os.Create(o.Output)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ids := make([]string, n)
	var in InputSet
	for i := range n {
		line := benchLine(i, 600)
		id, _ := lineID(line)
		ids[i] = string(id)
		in.Add(ids[i], Fingerprint(i+1))
		w.Write(seal(nil, line, Fingerprint(i+1)))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	jittered := slices.Clone(ids)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range jittered {
		if j := i + rng.IntN(512); j < n {
			jittered[i], jittered[j] = jittered[j], jittered[i]
		}
	}
	for _, c := range []struct {
		name  string
		order []string
		skip  bool
	}{{"SkipAll/in-order", ids, true}, {"SkipAll/jittered", jittered, true}, {"Classify/jittered", jittered, false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s, err := Open(o)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if c.skip {
					if !s.SkipAll(in.WithIDs(idList(c.order))) {
						b.Fatal("SkipAll refused")
					}
				} else {
					for k, id := range c.order {
						if v := s.Classify(id, 0); v != Skip {
							b.Fatalf("%d %s: %v", k, id, v)
						}
					}
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/n*1e9, "ns/id")
		})
	}
}
