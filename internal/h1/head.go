package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// readHead reads a response head up to its blank line and returns it as
// one string (the status line and the header lines, each with its line
// end), which parseHead slices: one allocation for all the head's values.
// got reports that bytes of it arrived before a failure.
func readHead(br *bufio.Reader, max int) (head string, got bool, err error) {
	if _, err := br.Peek(1); err != nil {
		if err == io.EOF {
			return "", false, errNoAnswer
		}
		return "", false, err
	}
	buf, _ := br.Peek(br.Buffered())
	if n, end := headLen(buf); n > 0 && end <= max {
		// The usual case: the whole head came in the first read.
		head = string(buf[:n])
		br.Discard(end)
		return head, true, nil
	}
	return readHeadLines(br, max)
}

// headLen finds a whole head at the start of buf: n is its length
// through the line end of its last header line, end through the blank
// line after it. n is 0 when buf holds no whole head, or starts with a
// line end (readHeadLines skips those).
func headLen(buf []byte) (n, end int) {
	if len(buf) == 0 || buf[0] == '\r' || buf[0] == '\n' {
		return 0, 0
	}
	for i := 0; i < len(buf); i++ {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return 0, 0
		}
		i += j // buf[i] ends a line; is the next one blank?
		switch rest := buf[i+1:]; {
		case len(rest) >= 1 && rest[0] == '\n':
			return i + 1, i + 2
		case len(rest) >= 2 && rest[0] == '\r' && rest[1] == '\n':
			return i + 1, i + 3
		}
	}
	return 0, 0
}

// readHeadLines is readHead line by line, for a head split over reads
// (or preceded by stray line ends).
func readHeadLines(br *bufio.Reader, max int) (head string, got bool, err error) {
	var blk []byte
	start := 0 // where the current line starts in blk
	for {
		line, err := br.ReadSlice('\n')
		blk = append(blk, line...)
		if len(blk) > max {
			return "", true, fmt.Errorf("h1: server response headers exceeded %d bytes; aborted", max)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			switch {
			case len(blk) == 0 && err == io.EOF:
				return "", false, errNoAnswer
			case err == io.EOF:
				return "", true, errCutHead
			}
			return "", len(blk) > 0, err
		}
		if ln := blk[start:]; len(ln) == 1 || (len(ln) == 2 && ln[0] == '\r') {
			if start == 0 {
				// A stray line end before the status line (after a
				// previous body, say): robustness, as RFC 9112 2.2 asks.
				blk = blk[:0]
				continue
			}
			return string(blk[:start]), true, nil
		}
		start = len(blk)
	}
}

// parseHead parses a head readHead returned into a Response without a
// body. Header keys are canonical (CanonicalMIMEHeaderKey), values are
// substrings of head.
func parseHead(head string) (*http.Response, error) {
	line, rest := cutLine(head)
	resp, err := parseStatus(line)
	if err != nil {
		return nil, err
	}
	n := strings.Count(rest, "\n")
	resp.Header = make(http.Header, n)
	strs := make([]string, n) // backs every one-value header, as textproto does
	for rest != "" {
		line, rest = cutLine(rest)
		if line[0] == ' ' || line[0] == '\t' {
			return nil, errors.New("h1: malformed response header: obsolete line folding")
		}
		colon := strings.IndexByte(line, ':')
		if colon <= 0 {
			return nil, fmt.Errorf("h1: malformed response header line %q", clip(line))
		}
		key, ok := canonicalKey(line[:colon])
		if !ok {
			return nil, fmt.Errorf("h1: malformed response header name %q", clip(line[:colon]))
		}
		v := trimOWS(line[colon+1:])
		if vs, ok := resp.Header[key]; ok {
			resp.Header[key] = append(vs, v)
			continue
		}
		strs[0] = v
		resp.Header[key] = strs[:1:1]
		strs = strs[1:]
	}
	return resp, nil
}

// parseStatus parses "HTTP/1.x CODE reason".
func parseStatus(line string) (*http.Response, error) {
	if len(line) < 12 || !strings.HasPrefix(line, "HTTP/1.") || line[8] != ' ' ||
		line[7] < '0' || line[7] > '9' || (len(line) > 12 && line[12] != ' ') {
		return nil, fmt.Errorf("h1: malformed HTTP status line %q", clip(line))
	}
	code := 0
	for _, d := range []byte(line[9:12]) {
		if d < '0' || d > '9' {
			return nil, fmt.Errorf("h1: malformed HTTP status code %q", clip(line))
		}
		code = code*10 + int(d-'0')
	}
	if code < 100 {
		return nil, fmt.Errorf("h1: malformed HTTP status code %q", clip(line))
	}
	proto := line[:8]
	switch proto {
	case "HTTP/1.1":
		proto = "HTTP/1.1"
	case "HTTP/1.0":
		proto = "HTTP/1.0"
	}
	return &http.Response{
		Status: strings.TrimLeft(line[9:], " "), StatusCode: code,
		Proto: proto, ProtoMajor: 1, ProtoMinor: int(line[7] - '0'),
	}, nil
}

// cutLine splits off s's first line (which readHead ended with "\n"),
// without its line end.
func cutLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	line, rest = s[:i], s[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// clip bounds what of a server's bytes an error quotes.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// canonicalKey is http.CanonicalHeaderKey(k) without allocating for a key
// already canonical or a common one; ok is false for a key that is not an
// HTTP token (textproto rejects those too).
func canonicalKey(k string) (string, bool) {
	canonical := true
	upper := true
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !tokenByte(c) {
			return "", false
		}
		if (upper && 'a' <= c && c <= 'z') || (!upper && 'A' <= c && c <= 'Z') {
			canonical = false
		}
		upper = c == '-'
	}
	if canonical {
		if ck, ok := commonKeys[k]; ok {
			return ck, true
		}
		return k, true
	}
	var arr [64]byte
	b := append(arr[:0], k...)
	upper = true
	for i, c := range b {
		if upper && 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		} else if !upper && 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
		upper = c == '-'
	}
	if ck, ok := commonKeys[string(b)]; ok {
		return ck, true
	}
	return string(b), true
}

// commonKeys interns the header names LLM APIs send on every answer, so
// a lower-case one costs no allocation. Read-only.
var commonKeys = func() map[string]string {
	m := make(map[string]string)
	for _, k := range []string{
		"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Alt-Svc", "Cache-Control",
		"Cf-Cache-Status", "Cf-Ray", "Connection", "Content-Encoding", "Content-Length", "Content-Type",
		"Date", "Keep-Alive", "Openai-Organization", "Openai-Processing-Ms", "Openai-Project", "Openai-Version",
		"Request-Id", "Retry-After", "Server", "Set-Cookie", "Strict-Transport-Security", "Transfer-Encoding",
		"Vary", "Via", "X-Content-Type-Options", "X-Envoy-Upstream-Service-Time", "X-Request-Id", "X-Should-Retry",
		"X-Ratelimit-Limit-Requests", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Requests",
		"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens",
		"Anthropic-Organization-Id", "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining",
		"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining",
		"Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Limit",
		"Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset",
		"Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining",
		"Anthropic-Ratelimit-Output-Tokens-Reset", "Server-Timing", "X-Goog-Upload-Status", "X-Goog-Upload-Url",
	} {
		m[k] = k
	}
	return m
}()
