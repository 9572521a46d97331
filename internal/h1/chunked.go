package h1

import (
	"errors"
	"fmt"
	"io"
)

// A chunked body is decoded by a byte-at-a-time state machine over the
// framing, so that it can run on any piece of the stream: what the
// connection's reader buffered (a response head's read takes the first
// events along), or the caller's own buffer, read into straight from the
// socket and decoded in place. The second is a stream's steady state: an
// answer that has arrived is read in one syscall into the SSE reader's
// buffer, however small the connection's read buffer (2 KiB, so that 512
// idle connections hold little), with no copy through it.

// chunk framing states.
const (
	csSize      uint8 = iota // a size line's hex digits
	csSizeBlank              // blanks after them
	csExt                    // a chunk extension, up to the line end
	csSizeLF                 // the LF after a size line's CR
	csData                   // chunkState.left bytes of chunk data
	csDataEnd                // the line end after chunk data
	csDataLF                 // the LF after chunk data's CR
	csTrailer                // a trailer line, or the blank line ending them
	csTrailerLF              // the LF after a trailer line's CR
	csEnd                    // the last chunk and its trailers were read
)

// maxChunkLine bounds a size line with its extensions, as the 2 KiB read
// buffer a line had to fit in did.
const maxChunkLine = 4 << 10

// chunkState is where the decoder is in the framing.
type chunkState struct {
	st     uint8
	digits int   // of the current size line
	size   int64 // parsed so far
	left   int64 // chunk data still to come
	line   int   // bytes of the current size or trailer line
	total  int   // trailer bytes so far
	limit  int   // bound on the trailers (the transport's header limit)
}

// readChunked reads chunk data into p: it blocks only while p is empty,
// then takes what more is already buffered, chunk headers included, so
// one Read can return several events. When the connection's buffer is
// empty and p is at least its size, the socket is read straight into p.
func (b *body) readChunked(p []byte) (int, error) {
	br := b.c.br
	for empty := 0; ; {
		if br.Buffered() > 0 {
			buf, _ := br.Peek(br.Buffered())
			used, n, err := b.chunks.decode(p, buf)
			_, _ = br.Discard(used)
			if n > 0 || err != nil {
				return n, err
			}
			continue // framing only: read on
		}
		if len(p) < br.Size() {
			if _, err := br.Peek(1); err != nil {
				return 0, unexpected(err)
			}
			continue
		}
		k, rerr := b.c.c.Read(p)
		if k == 0 && rerr == nil {
			if empty++; empty == 100 { // as bufio gives up
				return 0, io.ErrNoProgress
			}
			continue
		}
		used, n, err := b.chunks.decode(p, p[:k])
		if used < k {
			// Bytes past the body's end: no request asked for them, so
			// the connection cannot serve another.
			b.keep = false
		}
		if err != nil {
			return n, err
		}
		if rerr != nil {
			return n, unexpected(rerr)
		}
		if n > 0 {
			return n, nil
		}
	}
}

// unexpected is a read error inside a body: its end is not the body's.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decode consumes src's framing and copies its chunk data to dst, which
// may be src itself (data only moves down). It stops when src is used up,
// when dst is full at chunk data, or at the body's end (io.EOF), and
// returns the bytes of src it used and of dst it filled.
func (c *chunkState) decode(dst, src []byte) (used, n int, err error) {
	for used < len(src) && c.st != csEnd {
		if c.st == csData {
			k := min(int64(len(src)-used), int64(len(dst)-n), c.left)
			if k == 0 {
				return used, n, nil
			}
			n += copy(dst[n:], src[used:used+int(k)])
			used += int(k)
			if c.left -= k; c.left == 0 {
				c.st = csDataEnd
			}
			continue
		}
		if err := c.frame(src[used]); err != nil {
			return used, n, err
		}
		used++
	}
	if c.st == csEnd {
		return used, n, io.EOF
	}
	return used, n, nil
}

// frame takes one byte of framing.
func (c *chunkState) frame(ch byte) error {
	switch c.st {
	case csSize, csSizeBlank, csExt, csSizeLF:
		return c.sizeLine(ch)
	case csDataEnd, csDataLF:
		switch {
		case ch == '\n':
			c.st, c.line, c.digits, c.size = csSize, 0, 0, 0
		case ch == '\r' && c.st == csDataEnd:
			c.st = csDataLF
		default:
			return errors.New("h1: malformed chunked encoding: no line end after chunk data")
		}
	case csTrailer, csTrailerLF:
		switch {
		case ch == '\n' && c.line == 0:
			c.st = csEnd
		case ch == '\n':
			c.st, c.line = csTrailer, 0
		case ch == '\r' && c.st == csTrailer:
			c.st = csTrailerLF
		default:
			if c.st == csTrailerLF { // a CR inside the line
				c.line++
				c.st = csTrailer
			}
			c.line++
			if c.total++; c.total > c.limit {
				return errors.New("h1: chunked trailer too large")
			}
		}
	}
	return nil
}

// sizeLine takes one byte of a chunk-size line: hex digits, optional
// blanks, optional extensions after ';', and LF or CRLF.
func (c *chunkState) sizeLine(ch byte) error {
	if c.line++; c.line > maxChunkLine {
		return errors.New("h1: chunked encoding line too long")
	}
	if ch == '\n' {
		return c.sizeDone()
	}
	switch c.st {
	case csSize:
		if d, ok := hexDigit(ch); ok {
			if c.digits++; c.digits > 15 {
				return fmt.Errorf("h1: invalid chunk size: more than 15 hex digits")
			}
			c.size = c.size<<4 | int64(d)
			return nil
		}
		if c.digits > 0 && (ch == ' ' || ch == '\t') {
			c.st = csSizeBlank
			return nil
		}
	case csSizeBlank:
		if ch == ' ' || ch == '\t' {
			return nil
		}
	case csExt:
		return nil
	case csSizeLF: // a CR not before the LF, outside an extension
	}
	switch {
	case ch == ';' && c.digits > 0 && c.st != csSizeLF:
		c.st = csExt
		return nil
	case ch == '\r' && c.st != csSizeLF:
		c.st = csSizeLF
		return nil
	}
	return fmt.Errorf("h1: invalid chunk size: unexpected %q", ch)
}

// sizeDone ends a size line: chunk data follows, or the trailers after
// the last chunk.
func (c *chunkState) sizeDone() error {
	if c.digits == 0 {
		return errors.New("h1: invalid chunk size: no hex digits")
	}
	c.line = 0
	if c.size == 0 {
		c.st = csTrailer
		return nil
	}
	c.st, c.left = csData, c.size
	return nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
