package source

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// writeBatchLines writes n OpenAI batch lines (about 330 bytes each) as a
// typical generator writes them: compact, keys in the generator's order
// (not sorted), every fourth prompt with non-ASCII text.
func writeBatchLines(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path := filepath.Join(dir, "batch.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		text := fmt.Sprintf("Tell me one fact about the number %d, in two sentences, for a curious reader.", i)
		if i%4 == 0 {
			text = fmt.Sprintf("Écris une phrase sur le nombre %d — avec des accents: é, à, ü.", i)
		}
		fmt.Fprintf(w, `{"custom_id":"request-%08d","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":%q}],"max_tokens":200,"temperature":0.7}}`+"\n", i, text)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkCheckFingerprint is the check pass over 200k batch lines with a
// route, so that every request is fingerprinted: the µs/line the rerun
// decision costs on top of parsing.
func BenchmarkCheckFingerprint(b *testing.B) {
	const n = 200_000
	path := writeBatchLines(b, b.TempDir(), n)
	p := Parser{Format: providers.FormatOpenAI}
	route := &Route{Provider: &slowProvider{}}
	b.ReportAllocs()
	for b.Loop() {
		src := &Source{Path: path, Parser: p, Route: route}
		res, err := src.Check()
		if err != nil || res.Requests != n {
			b.Fatalf("%+v %v", res, err)
		}
		src.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/n, "µs/line")
}

// BenchmarkFingerprint compares one request's fingerprint in the legacy
// scheme (the body's bytes) and the canonical one, for a body in a
// generator's key order and for one already canonical (the fast path).
func BenchmarkFingerprint(b *testing.B) {
	f := NewFingerprinter(Route{Provider: &slowProvider{}})
	bodies := map[string]string{
		"unsorted":  `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Tell me one fact about the number 12345, in two sentences, for a curious reader."}],"max_tokens":200,"temperature":0.7}`,
		"canonical": `{"max_tokens":200,"messages":[{"content":"You are terse.","role":"system"},{"content":"Tell me one fact about the number 12345, in two sentences, for a curious reader.","role":"user"}],"model":"gpt-4o-mini","temperature":0.7}`,
	}
	for _, name := range []string{"unsorted", "canonical"} {
		req := &providers.Request{ID: "x", Body: []byte(bodies[name])}
		b.Run("legacy/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Legacy(req)
			}
		})
		b.Run("canonical/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Of(req)
			}
		})
	}
}
