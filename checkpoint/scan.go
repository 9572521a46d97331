package checkpoint

import (
	"bytes"
	"fmt"
	"io"

	"github.com/tidwall/gjson"
)

// scanChunk is the read size of scan; lines longer than it grow the buffer.
const scanChunk = 4 << 20

// scanResult describes a scanned file.
type scanResult struct {
	Lines    int   // well-formed lines passed to the callback
	Size     int64 // bytes read
	Good     int64 // length of the good prefix; Size-Good bytes are a torn tail
	TornLine int   // 1-based line number where the torn tail starts; 0 if none
}

// lineFunc receives each well-formed line (without its '\n') and its id; both
// slices are valid only during the call. When not strict, id is nil for a line
// without a usable "custom_id".
type lineFunc func(no int, line, id []byte) error

// scan reads a JSONL checkpoint file and calls fn for every well-formed line,
// in order. Blank lines are skipped.
//
// The last line is held back until EOF and then validated in full: if it lacks
// its '\n' or is not valid JSON it is a torn tail (reported in the result, not
// passed to fn). Every other line is checked only cheaply (an object with a
// string or number "custom_id"); if strict, one that fails that check makes
// scan return a *CorruptError, unless it is the last line, where it is a torn
// tail too. When not strict (the errors file), every such line is passed on.
func scan(r io.Reader, path string, strict bool, fn lineFunc) (scanResult, error) {
	return scanBuf(r, path, strict, fn, scanChunk)
}

// scanBuf is scan with the initial buffer size as a parameter, for tests.
func scanBuf(r io.Reader, path string, strict bool, fn lineFunc, chunk int) (scanResult, error) {
	var (
		res        scanResult
		buf        = make([]byte, chunk)
		base       int64 // file offset of buf[0]
		start, end int   // unprocessed bytes: buf[start:end]
		no         int   // line number of the last complete line

		pend         bool  // a well-formed line is held back
		pStart, pEnd int   // its bytes: buf[pStart:pEnd]
		pNo          int   // its line number
		pAfter       int64 // offset after it and any blank lines that follow

		bad       bool // a malformed line was seen; only blank lines may follow
		badNo     int
		badOff    int64
		badReason string
	)
	emit := func() error {
		line := buf[pStart:pEnd]
		id, _ := lineID(line)
		res.Lines++
		pend = false
		res.Good = pAfter
		return fn(pNo, line, id)
	}
	for {
		n, rerr := r.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[start:end], '\n')
			if i < 0 {
				break
			}
			no++
			line := buf[start : start+i]
			next := start + i + 1
			switch {
			case isBlank(line):
				if pend {
					pAfter = base + int64(next)
				} else if !bad {
					res.Good = base + int64(next)
				}
			case bad:
				return res, &CorruptError{Path: path, Line: badNo, Offset: badOff, Reason: badReason}
			default:
				if pend {
					if err := emit(); err != nil {
						return res, err
					}
				}
				if reason := checkLine(line); !strict || reason == "" {
					pend, pStart, pEnd, pNo, pAfter = true, start, start+i, no, base+int64(next)
				} else {
					bad, badNo, badOff, badReason = true, no, base+int64(start), reason
				}
			}
			start = next
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return res, fmt.Errorf("checkpoint: read %s: %w", path, rerr)
		}
		keep := start
		if pend {
			keep = pStart
		}
		if keep > 0 {
			copy(buf, buf[keep:end])
			base += int64(keep)
			end -= keep
			start -= keep
			pStart -= keep
			pEnd -= keep
		}
		if end == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
	res.Size = base + int64(end)
	if pend {
		if gjson.ValidBytes(buf[pStart:pEnd]) {
			if err := emit(); err != nil {
				return res, err
			}
		} else {
			res.TornLine = pNo
			return res, nil
		}
	}
	switch {
	case bad:
		res.TornLine = badNo
	case res.Good < res.Size:
		res.TornLine = no + 1
	}
	return res, nil
}

// checkLine is scan's cheap check of a line that is not the last: "" if it is
// well-formed, else the reason.
func checkLine(line []byte) string {
	if !isObject(line) {
		return "not a JSON object"
	}
	if _, ok := lineID(line); !ok {
		return `no "custom_id"`
	}
	return ""
}

// isObject reports whether line looks like one JSON object: braces at both
// ends, space aside.
func isObject(line []byte) bool {
	t := trimSpace(line)
	return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}'
}

// lineID returns the top-level "custom_id" of a JSON object line: a string's
// content or a number's text. The fast path walks the leading "key":"value"
// pairs of a compact line (the runner's lines begin {"id":"…","custom_id":"…")
// without a parser; anything else (space, escapes, other value types before
// custom_id) goes through gjson, which skips values without decoding them.
// The id may alias line.
func lineID(line []byte) ([]byte, bool) {
	if !isObject(line) {
		return nil, false
	}
	t := trimSpace(line)
	if id, ok := leadingID(t); ok {
		return id, true
	}
	r := gjson.GetBytes(t, "custom_id")
	switch r.Type {
	case gjson.String:
		if r.Str == "" {
			return nil, false
		}
		return []byte(r.Str), true
	case gjson.Number:
		return []byte(r.Raw), true
	}
	return nil, false
}

// leadingID looks for "custom_id" among the first few top-level pairs of a
// compact object whose keys and values are strings without escapes.
func leadingID(t []byte) ([]byte, bool) {
	const maxPairs = 4
	p := t[1:] // after '{'
	for range maxPairs {
		key, rest, ok := plainString(p)
		if !ok || len(rest) < 2 || rest[0] != ':' {
			return nil, false
		}
		val, rest, ok := plainString(rest[1:])
		if !ok || len(rest) == 0 || (rest[0] != ',' && rest[0] != '}') {
			return nil, false
		}
		if string(key) == "custom_id" {
			return val, len(val) > 0
		}
		if rest[0] == '}' {
			return nil, false
		}
		p = rest[1:]
	}
	return nil, false
}

// plainString reads a JSON string without escapes at the start of b and
// returns its content and what follows it.
func plainString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	i := bytes.IndexByte(b[1:], '"')
	if i < 0 || bytes.IndexByte(b[1:1+i], '\\') >= 0 {
		return nil, nil, false
	}
	return b[1 : 1+i], b[2+i:], true
}

func isBlank(b []byte) bool { return len(trimSpace(b)) == 0 }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }
