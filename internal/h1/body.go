package h1

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// body states: the request owns the connection (open), gave it back or
// closed it at the body's end (done), or Close was called (closed).
const (
	open uint32 = iota
	done
	closed
)

// body reads a response's body off its connection, framed by
// Content-Length, by chunks, or by the connection's end. At a clean end
// (io.EOF) the connection goes back to the pool; Close before that aborts
// the request by closing it, which is how a server learns to stop.
// Reads return what is available: a stream's events arrive as sent.
type body struct {
	c       *conn
	ctx     context.Context
	stop    func() bool // unregisters ctx's interrupt; false once it ran
	keep    bool        // the connection may serve another request
	chunked bool
	n       int64 // bytes left: of the body, or of the current chunk; -1 until close
	chunks  chunkState
	err     error // sticky, only the reader's
	state   atomic.Uint32
}

// attachBody sets resp's Body (and ContentLength, TransferEncoding, Close,
// Uncompressed) from its framing headers. A response without a body
// releases the connection at once.
func (c *conn) attachBody(ctx context.Context, req *http.Request, resp *http.Response, stop func() bool, gzip, keep bool) error {
	h := resp.Header
	b := &body{c: c, ctx: ctx, stop: stop}
	b.keep = keep && resp.ProtoMinor == 1 && !closeToken(h["Connection"]) &&
		!req.Close && !closeToken(req.Header["Connection"])
	resp.Close = !b.keep
	te, cl := h["Transfer-Encoding"], h["Content-Length"]
	switch {
	case req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
		resp.ContentLength = 0 // as net/http: a HEAD's is the header's, or -1
		if req.Method == http.MethodHead {
			resp.ContentLength = -1
			if len(cl) > 0 {
				resp.ContentLength, _ = strconv.ParseInt(cl[0], 10, 64)
			}
		}
		b.n = 0
	case len(te) > 0:
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			b.release(false)
			return fmt.Errorf("h1: unsupported transfer encoding %q", te)
		}
		delete(h, "Transfer-Encoding")
		delete(h, "Content-Length")
		resp.TransferEncoding = []string{"chunked"}
		resp.ContentLength = -1
		b.chunked, b.n = true, 0
		b.chunks.limit = c.t.maxHeader()
	case len(cl) > 0:
		n, err := contentLength(cl)
		if err != nil {
			b.release(false)
			return err
		}
		resp.ContentLength, b.n = n, n
	default:
		resp.ContentLength, b.n, b.keep = -1, -1, false
		resp.Close = true
	}
	if b.n == 0 && !b.chunked {
		b.release(true)
		resp.Body = http.NoBody
		return nil
	}
	resp.Body = b
	if gzip && strings.EqualFold(h.Get("Content-Encoding"), "gzip") {
		delete(h, "Content-Encoding")
		delete(h, "Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
		resp.Body = &gzipBody{b: b}
	}
	return nil
}

// contentLength parses Content-Length values, which must agree.
func contentLength(vs []string) (int64, error) {
	v := trimOWS(vs[0])
	for _, o := range vs[1:] {
		if trimOWS(o) != v {
			return 0, fmt.Errorf("h1: message cannot contain multiple Content-Length headers; got %q", vs)
		}
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("h1: bad Content-Length %q", clip(v))
	}
	return int64(n), nil
}

// closeToken reports whether a Connection header lists "close".
func closeToken(vs []string) bool {
	for _, v := range vs {
		for v != "" {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(trimOWS(tok), "close") {
				return true
			}
		}
	}
	return false
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.state.Load() == closed {
		return 0, errClosedBody
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	switch {
	case b.chunked:
		n, err = b.readChunked(p)
	case b.n < 0:
		n, err = b.c.br.Read(p)
	default:
		n, err = b.readLength(p)
	}
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.release(true)
		b.err = io.EOF
		return n, io.EOF
	}
	b.release(false)
	switch {
	case b.state.Load() == closed:
		b.err = errClosedBody
	case b.ctx.Err() != nil:
		b.err = context.Cause(b.ctx)
	default:
		b.err = err
	}
	return n, b.err
}

// readLength reads a Content-Length body; the read that ends it returns
// io.EOF with its bytes, which releases the connection at once.
func (b *body) readLength(p []byte) (int, error) {
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.c.br.Read(p)
	b.n -= int64(n)
	if b.n == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// release ends the request's hold on the connection once: back to the
// pool when reuse (a clean end), the server allows it and ctx's interrupt
// did not fire; closed otherwise.
func (b *body) release(reuse bool) {
	if !b.state.CompareAndSwap(open, done) {
		return
	}
	if b.stop() && reuse && b.keep {
		b.c.t.putIdle(b.c)
		return
	}
	b.c.close()
}

// Close aborts the request unless the body was read to its end. It may be
// called while a Read blocks, which it interrupts.
func (b *body) Close() error {
	if b.state.Swap(closed) == open {
		b.stop()
		b.c.close()
	}
	return nil
}

// gzipBody decompresses a gzip answer, as net/http's Transport does for
// the Accept-Encoding it added. The gzip reader (some 40 KB of window and
// tables) comes from the transport's pool at the first Read and goes back
// at a clean end.
type gzipBody struct {
	b   *body
	zr  *gzip.Reader
	err error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		if err := g.open(); err != nil {
			g.err = err
			return 0, err
		}
	}
	n, err := g.zr.Read(p)
	if err != nil {
		g.err = err
		if err == io.EOF {
			g.b.c.t.gzips.Put(g.zr)
			g.zr = nil
		}
	}
	return n, err
}

func (g *gzipBody) open() error {
	if zr, ok := g.b.c.t.gzips.Get().(*gzip.Reader); ok {
		if err := zr.Reset(g.b); err != nil {
			g.b.c.t.gzips.Put(zr)
			return err
		}
		g.zr = zr
		return nil
	}
	zr, err := gzip.NewReader(g.b)
	g.zr = zr
	return err
}

func (g *gzipBody) Close() error { return g.b.Close() }
