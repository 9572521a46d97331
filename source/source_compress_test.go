package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/llmrun/llmrun/providers"
)

func gzipped(t testing.TB, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(data))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zstded(t testing.TB, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(data))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCompressedInputs(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	const n = 2000 // several digest chunks once decompressed
	data := simpleLines(n)
	want := func(t *testing.T, src *Source) {
		t.Helper()
		defer src.Close()
		total, ids := passes(t, src)
		if total != n || len(ids) != n || ids[0] != "r0" || ids[n-1] != "r1999" {
			t.Fatalf("check %d, run %d ids", total, len(ids))
		}
	}
	for name, tc := range map[string]struct {
		file string
		data []byte
	}{
		"gzip by name":          {"in.jsonl.gz", gzipped(t, data)},
		"zstd by name":          {"in.jsonl.zst", zstded(t, data)},
		"gzip by magic":         {"in.jsonl", gzipped(t, data)},
		"zstd by magic":         {"in.data", zstded(t, data)},
		"concatenated gzip":     {"in.jsonl.gz", append(gzipped(t, data[:len(data)/2]), gzipped(t, data[len(data)/2:])...)},
		"gzip with a BOM":       {"in.jsonl.gz", gzipped(t, "\xEF\xBB\xBF"+data)},
		"zstd uppercase suffix": {"IN.JSONL.ZST", zstded(t, data)},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			want(t, &Source{Path: path, Parser: p})
		})
	}
	t.Run("zstd on standard input", func(t *testing.T) {
		dir := t.TempDir()
		want(t, &Source{Path: "-", Parser: p, Stdin: bytes.NewReader(zstded(t, data)), SpoolDir: dir})
	})
	t.Run("gzip on standard input", func(t *testing.T) {
		dir := t.TempDir()
		want(t, &Source{Path: "-", Parser: p, Stdin: bytes.NewReader(gzipped(t, data)), SpoolDir: dir})
	})
}

func TestBadCompressedInputs(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	data := simpleLines(3000)
	gz := gzipped(t, data)
	corrupt := bytes.Clone(gz)
	corrupt[len(corrupt)-6] ^= 0xff // inside the CRC/size trailer
	zs := zstded(t, data)
	for name, tc := range map[string]struct {
		file string
		data []byte
		want string
	}{
		"plain text named .gz": {"in.jsonl.gz", []byte(data), "named .gz, but its data is not gzip"},
		"gzip cut short":       {"in.jsonl.gz", gz[:len(gz)/2], "gzip data ends early"},
		"gzip bad checksum":    {"in.jsonl.gz", corrupt, "gzip data is corrupt"},
		"zstd cut short":       {"in.jsonl.zst", zs[:len(zs)/2], "zstd data"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			os.WriteFile(path, tc.data, 0o644)
			_, err := (&Source{Path: path, Parser: p}).Check()
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path+":") {
				t.Fatalf("err = %v, want an input error naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}
