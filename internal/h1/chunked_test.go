package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"testing"
)

// decodeAll runs a fresh chunkState over src fed in pieces of step bytes
// (0: whole) into a dst of dstSize bytes, as Read would: data out, and the
// error that ended it (io.EOF at the body's end, nil when src ran out).
func decodeAll(src string, step, dstSize int) (string, error) {
	c := chunkState{limit: 64}
	var out []byte
	dst := make([]byte, dstSize)
	in := []byte(src)
	for len(in) > 0 {
		piece := in
		if step > 0 && len(piece) > step {
			piece = piece[:step]
		}
		used, n, err := c.decode(dst, piece)
		out = append(out, dst[:n]...)
		in = in[used:]
		if err != nil {
			return string(out), err
		}
		if used == 0 && n == 0 {
			return string(out), errors.New("no progress")
		}
	}
	return string(out), nil
}

// TestChunkDecode: the framing decoder gives the same data and the same
// verdict however the bytes are split (byte by byte, as a read boundary
// may cut a size line anywhere) and however small the destination.
func TestChunkDecode(t *testing.T) {
	for _, tc := range []struct{ in, data, err string }{
		{"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", "EOF"},
		{"5;ext=1;q=\"a\r\"\r\nhello\r\n0\r\n\r\n", "hello", "EOF"},
		{"5 \t;x\r\nhello\r\n0\r\n\r\n", "hello", "EOF"},
		{"5\nhello\n0\n\n", "hello", "EOF"},
		{"B\r\nhello world\r\n0\r\nX-Sum: 42\r\nX-More: y\r\n\r\n", "hello world", "EOF"},
		{"1a\r\n" + strings.Repeat("x", 26) + "\r\n0\r\n\r\n", strings.Repeat("x", 26), "EOF"},
		{"5\r\nhel", "hel", ""},              // the rest is yet to come
		{"5\r\nhello\r\n0\r\n", "hello", ""}, // trailers yet to come
		{"zz\r\n", "", "invalid chunk size"},
		{"\r\n", "", "invalid chunk size"},
		{"5 5\r\n", "", "invalid chunk size"},
		{"5\rx\n", "", "invalid chunk size"},
		{";x\r\n", "", "invalid chunk size"},
		{"1000000000000000\r\n", "", "invalid chunk size"},
		{"5\r\nhelloX\r\n", "hello", "no line end after chunk data"},
		{"0\r\n" + strings.Repeat("X-Pad: y\r\n", 10) + "\r\n", "", "trailer too large"},
		{"5;" + strings.Repeat("e", maxChunkLine) + "\r\n", "", "line too long"},
	} {
		for _, step := range []int{0, 1, 2, 3, 7} {
			for _, dstSize := range []int{1, 4, 64} {
				data, err := decodeAll(tc.in, step, dstSize)
				got := ""
				if err != nil {
					got = err.Error()
				}
				if data != tc.data || !strings.Contains(got, tc.err) || (tc.err == "") != (err == nil) {
					t.Errorf("%q in %d-byte pieces, %d-byte dst: %q, %v; want %q, %q", tc.in, step, dstSize, data, err, tc.data, tc.err)
				}
			}
		}
	}
}

// countingConn counts the reads of a client connection.
type countingConn struct {
	net.Conn
	reads *atomic.Int32
}

func (c countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// TestStreamReadStraightIntoBuffer: a stream that has arrived whole (61
// events, some 15 KB, as the mock sends a long answer) is read in a read
// or two into the caller's 16 KiB buffer, not in pieces of the
// connection's 2 KiB one, and the connection is pooled at its end.
func TestStreamReadStraightIntoBuffer(t *testing.T) {
	tr, _, _ := newTransport(t)
	tr.ReadBufferSize = 2 << 10
	var reads atomic.Int32
	dial := tr.Dial
	tr.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		return countingConn{c, &reads}, err
	}
	var want, wire strings.Builder
	for i := range 61 {
		ev := fmt.Sprintf("data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%03d%s\"}}]}\n\n", i, strings.Repeat(".", 160))
		want.WriteString(ev)
		fmt.Fprintf(&wire, "%x\r\n%s\r\n", len(ev), ev)
	}
	answer := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + wire.String() + "0\r\n\r\n"
	url := rawServer(t, serveN(answer, nil))
	resp, err := post(t, tr, t.Context(), url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(bufio.NewReaderSize(resp.Body, 16<<10))
	if err != nil || body == nil || string(body) != want.String() {
		t.Fatalf("body of %d bytes (want %d), %v", len(body), want.Len(), err)
	}
	// One read for the head (with the first events), one or two for the
	// rest, as loopback delivers it.
	if n := reads.Load(); n > 4 {
		t.Errorf("%d reads for a %d-byte answer that had arrived", n, len(answer))
	}
	if idleConns(tr, url) != 1 {
		t.Error("the connection was not pooled at the stream's end")
	}
}

// TestBytesPastChunkedEnd: bytes a server sends after a chunked body's
// end, read along with it, are not mistaken for data, and the connection
// they came on serves nothing more.
func TestBytesPastChunkedEnd(t *testing.T) {
	tr, dials, _ := newTransport(t)
	tr.ReadBufferSize = 2 << 10
	headRead := make(chan struct{})
	url := rawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		if n > 0 {
			serveN("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil)(n, c, br)
			return
		}
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		<-headRead // the body comes in a read of its own, straight into the caller's buffer
		io.WriteString(c, "5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbad")
		readRequest(br)
	})
	for i, want := range []string{"hello", "ok"} {
		resp, err := post(t, tr, t.Context(), url, "{}")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			close(headRead)
		}
		body, err := io.ReadAll(bufio.NewReaderSize(resp.Body, 16<<10))
		resp.Body.Close()
		if err != nil || string(body) != want {
			t.Fatalf("body %q, %v; want %q", body, err, want)
		}
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2: a connection with unasked-for bytes was reused", n)
	}
}

// FuzzChunkDecode: what net/http's chunked writer encodes decodes to the
// same bytes however it is split, and arbitrary framing never makes the
// decoder overrun its buffers or stall.
func FuzzChunkDecode(f *testing.F) {
	f.Add([]byte("data: hello\n\n"), uint8(3), uint8(1))
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), uint8(0), uint8(7))
	f.Fuzz(func(t *testing.T, in []byte, step, dst uint8) {
		var enc bytes.Buffer
		w := httputil.NewChunkedWriter(&enc)
		for rest := in; len(rest) > 0; {
			k := min(len(rest), int(step)+1)
			w.Write(rest[:k])
			rest = rest[k:]
		}
		w.Close()
		enc.WriteString("\r\n")
		data, err := decodeAll(enc.String(), int(step), int(dst)+1)
		if err != io.EOF || data != string(in) {
			t.Fatalf("%q: got %q, %v", enc.String(), data, err)
		}
		c := chunkState{limit: 64}
		buf := make([]byte, int(dst)+1)
		for src := in; len(src) > 0; {
			used, n, err := c.decode(buf, src)
			if used > len(src) || n > len(buf) || (used == 0 && n == 0 && err == nil && c.st != csData) {
				t.Fatalf("%q: used %d of %d, wrote %d of %d, %v", src, used, len(src), n, len(buf), err)
			}
			if err != nil || used == 0 {
				break
			}
			src = src[used:]
		}
	})
}
