package h1

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readHead returns the same head, and leaves the same bytes after it,
// whether the head arrives in one read (taken from the read buffer) or a
// byte at a time (line by line): CRLF and bare LF line ends, stray line
// ends before the status line, a head at the size bound and past it.
func TestReadHeadWholeOrSplit(t *testing.T) {
	const body = "BODY"
	for _, tc := range []struct {
		name, in, head string
		max            int
		err            bool
	}{
		{"crlf", "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n", "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n", 1 << 20, false},
		{"lf", "HTTP/1.1 200 OK\nA: 1\n\n", "HTTP/1.1 200 OK\nA: 1\n", 1 << 20, false},
		{"no headers", "HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 204 No Content\r\n", 1 << 20, false},
		{"stray line ends", "\r\n\nHTTP/1.1 200 OK\r\nA: 1\r\n\r\n", "HTTP/1.1 200 OK\r\nA: 1\r\n", 1 << 20, false},
		{"at the bound", "HTTP/1.1 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\n", 19, false},
		{"past the bound", "HTTP/1.1 200 OK\r\nA: 1\r\n\r\n", "", 20, true},
	} {
		for _, split := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.in + body)
			if split {
				r = iotest.OneByteReader(r)
			}
			br := bufio.NewReaderSize(r, 64)
			head, got, err := readHead(br, tc.max)
			if (err != nil) != tc.err || head != tc.head || !got {
				t.Errorf("%s (split %v): head %q, got %v, err %v; want %q, error %v", tc.name, split, head, got, err, tc.head, tc.err)
				continue
			}
			if rest, _ := io.ReadAll(br); !tc.err && string(rest) != body {
				t.Errorf("%s (split %v): %q left after the head, want %q", tc.name, split, rest, body)
			}
		}
	}
	for _, tc := range []struct {
		in   string
		want error
		got  bool
	}{{"", errNoAnswer, false}, {"HTTP/1.1 200 OK\r\nA: 1", errCutHead, true}} {
		_, got, err := readHead(bufio.NewReader(strings.NewReader(tc.in)), 1<<20)
		if !errors.Is(err, tc.want) || got != tc.got {
			t.Errorf("%q: got %v, err %v; want %v, %v", tc.in, got, err, tc.got, tc.want)
		}
	}
}
