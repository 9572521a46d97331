package source

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Magic numbers of the compressed formats read transparently.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decodeError is a compressed stream that cannot be decoded: corrupt or
// cut short. It is the input's fault, so it becomes an InputError.
type decodeError struct {
	format string
	err    error
}

func (e *decodeError) Error() string {
	if errors.Is(e.err, io.ErrUnexpectedEOF) {
		return fmt.Sprintf("%s data ends early (a truncated file?)", e.format)
	}
	return fmt.Sprintf("%s data is corrupt: %v", e.format, e.err)
}

func (e *decodeError) Unwrap() error { return e.err }

// decoded reports the decoder's errors, other than the end, as decodeErrors.
type decoded struct {
	io.Reader
	format string
	close  func()
}

func (d *decoded) Read(p []byte) (int, error) {
	n, err := d.Reader.Read(p)
	if err != nil && err != io.EOF {
		err = &decodeError{d.format, err}
	}
	return n, err
}

func (d *decoded) Close() error {
	d.close()
	return nil
}

// decompress returns r's content, decompressed if it is gzip or zstd data.
// The format is told by its magic number, whatever the name says; a name
// ending in .gz or .zst whose data is not that format is an error, since
// reading it as text would only fail further on, less clearly.
func decompress(r io.Reader, name string) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &decodeError{"gzip", err}
		}
		return &decoded{Reader: zr, format: "gzip", close: func() { zr.Close() }}, nil
	case bytes.HasPrefix(head, zstdMagic):
		// One goroutine and a small footprint: the input is read at the pace
		// of the run, not raced through.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, &decodeError{"zstd", err}
		}
		return &decoded{Reader: zr, format: "zstd", close: zr.Close}, nil
	}
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".gz", ".zst":
		return nil, fmt.Errorf("named %s, but its data is not %s", ext, map[string]string{".gz": "gzip", ".zst": "zstd"}[ext])
	}
	return io.NopCloser(br), nil
}
