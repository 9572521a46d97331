package h1

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// maxInline is the largest body sent in the head's write; a larger one is
// copied to the socket after the head (batch uploads).
const maxInline = 64 << 10

// write is one request as bytes: its head and, up to maxInline, its body
// in one pooled buffer, so it is sent with one Write and can be sent
// again on another connection when nothing of it was written.
type write struct {
	t    *Transport
	buf  *[]byte
	body io.ReadCloser // the rest, copied after buf; nil when buf has all
	n    int64         // the rest's length
	gzip bool          // Accept-Encoding: gzip was added
}

// newWrite renders req. The request body is read into the buffer and
// closed unless it is larger than maxInline.
func (t *Transport) newWrite(req *http.Request) (*write, error) {
	w := &write{t: t, buf: t.getBuf()}
	w.gzip = !t.DisableCompression && req.Method != http.MethodHead &&
		req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == ""
	b, err := appendHead((*w.buf)[:0], req, w.gzip)
	if err == nil {
		b, err = w.inline(b, req)
	}
	*w.buf = b
	if err != nil {
		closeBody(req)
		w.release()
		return nil, err
	}
	return w, nil
}

// inline appends req's body to b when it is small enough; otherwise it
// keeps the body for stream.
func (w *write) inline(b []byte, req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return b, nil
	}
	n := req.ContentLength
	if n > maxInline {
		w.body, w.n = req.Body, n
		return b, nil
	}
	h := len(b)
	b = slices.Grow(b, int(n)+1)[:h+int(n)]
	got, err := io.ReadFull(req.Body, b[h:])
	if err == nil {
		// One byte more than announced is a caller's bug net/http reports too.
		if extra, _ := req.Body.Read(b[len(b) : len(b)+1]); extra > 0 {
			return b, fmt.Errorf("h1: http.Request.ContentLength=%d with a longer Body", n)
		}
	}
	req.Body.Close()
	if err != nil {
		return b, fmt.Errorf("h1: http.Request.ContentLength=%d with Body length %d: %w", n, got, err)
	}
	return b, nil
}

// stream copies the body larger than maxInline after the head. local
// reports a failure of the body itself (a read error, a length short of
// ContentLength): the connection is fine but owes the server bytes.
func (w *write) stream(dst io.Writer) (local bool, err error) {
	if w.body == nil {
		return false, nil
	}
	src := &srcReader{r: w.body}
	defer w.closeBody()
	got, err := io.Copy(dst, io.LimitReader(src, w.n))
	if src.err != nil {
		return true, src.err
	}
	if err == nil && got < w.n {
		return true, fmt.Errorf("h1: http.Request.ContentLength=%d with Body length %d", w.n, got)
	}
	return false, err
}

// srcReader remembers its reader's failure, to tell it from the socket's.
type srcReader struct {
	r   io.Reader
	err error
}

func (s *srcReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// closeBody closes a body not yet streamed (a failed request).
func (w *write) closeBody() {
	if w.body != nil {
		w.body.Close()
		w.body = nil
	}
}

// release returns the buffer; a large one is dropped so a rare big
// request does not pin memory.
func (w *write) release() {
	if w.buf == nil {
		return
	}
	if cap(*w.buf) <= maxInline+4<<10 {
		w.t.bufs.Put(w.buf)
	}
	w.buf = nil
}

func (t *Transport) getBuf() *[]byte {
	if b, ok := t.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 2<<10)
	return &b
}

// appendHead appends req's request line and headers, as net/http writes
// them: Host, a default User-Agent, Content-Length, Connection: close
// when asked, the caller's headers (validated: no CR/LF injection), and
// Accept-Encoding: gzip when gzip.
func appendHead(b []byte, req *http.Request, gzip bool) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if ua, ok := req.Header["User-Agent"]; !ok {
		b = append(b, "User-Agent: Go-http-client/1.1\r\n"...)
	} else if len(ua) > 0 && ua[0] != "" {
		if !validValue(ua[0]) {
			return b, fmt.Errorf("h1: invalid header field value for %q", "User-Agent")
		}
		b = appendField(b, "User-Agent", ua[0])
	}
	if n := req.ContentLength; n > 0 || (n == 0 && method != http.MethodGet && method != http.MethodHead) {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, "\r\n"...)
	}
	if req.Close && !closeToken(req.Header["Connection"]) {
		b = append(b, "Connection: close\r\n"...)
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		if !validName(k) {
			return b, fmt.Errorf("h1: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !validValue(v) {
				return b, fmt.Errorf("h1: invalid header field value for %q", k)
			}
			b = appendField(b, k, v)
		}
	}
	if gzip {
		b = append(b, "Accept-Encoding: gzip\r\n"...)
	}
	return append(b, "\r\n"...), nil
}

func appendField(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	b = append(b, trimOWS(v)...)
	return append(b, "\r\n"...)
}

func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !tokenByte(k[i]) {
			return false
		}
	}
	return true
}

// validValue rejects control bytes but tab: a CR or LF in a value would
// start a header (or a request) of the value's choosing.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// trimOWS trims the spaces and tabs around a field value.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
