// Package canonjson writes JSON in one canonical form, after RFC 8785 (the
// JSON Canonicalization Scheme): no whitespace, object members sorted by
// their keys' UTF-16 code units, strings with the fewest escapes, numbers
// as ECMAScript prints doubles. Two encodings of the same value (other
// spacing, other key order, `\u00e9` for `é`, `1.0` for `1`) give the same
// bytes, which is what a fingerprint of a request's meaning hashes.
//
// It departs from RFC 8785 where a fingerprint must not merge different
// requests or fail:
//
//   - An integer literal (digits only, no fraction or exponent) is kept digit
//     for digit, however large: as a double, 9007199254740993 would become
//     …992 and two different seeds would look equal. Within ±2^53 this is
//     what RFC 8785 prints anyway; beyond it, the same number written once
//     as an integer and once with a fraction or exponent counts as two
//     (which only ever re-asks a request, never skips one).
//   - A number too large for a double (1e400) is kept as written.
//   - A lone surrogate escape (`\ud800`) is kept as a lowercase escape
//     instead of being refused; duplicate keys are kept, in their order.
//
// The canonical bytes are streamed to a Writer (a hash) and never held
// whole: a Canon keeps only small scratch tables, reused from one value to
// the next. A value already in canonical form, the common case for inputs
// made by a canonicalising tool, is recognised in one pass and written as
// it is.
package canonjson

import (
	"errors"
	"io"
	"math"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Writer is where the canonical bytes go; hash digests implement it.
type Writer interface {
	io.Writer
	io.StringWriter
}

// ErrSyntax is returned for input that is not one JSON value.
var ErrSyntax = errors.New("canonjson: invalid JSON")

// node kinds.
const (
	kString = iota
	kNumber
	kLiteral // true, false, null
	kObject
	kArray
)

// node is one value of the tokenised input. The children of an object or
// array follow it (an object's as key, value pairs); next is the index of
// the node after its subtree.
type node struct {
	start, end int32 // span in the input (strings with their quotes)
	next       int32
	kind       uint8
	fix        bool // a string or number not in canonical form
}

// member is an object member while its object is written: the key's
// decoded bytes (in the input or in Canon.keys) and its value's node.
type member struct {
	ks, ke  int32
	scratch bool
	key     int32 // the key's node
}

// Canon canonicalises JSON values. The zero value is ready; a Canon is not
// safe for concurrent use.
type Canon struct {
	in    []byte
	nodes []node
	mem   []member
	keys  []byte
	canon bool // the input is canonical as it is
	out   buf
}

// buf gathers small pieces before they reach the Writer: a hash digest
// costs a call per write, and canonical JSON is mostly short pieces.
type buf struct {
	w Writer
	b [256]byte
	n int
}

func (o *buf) flush() {
	if o.n > 0 {
		o.w.Write(o.b[:o.n])
		o.n = 0
	}
}

func (o *buf) byte(c byte) {
	if o.n == len(o.b) {
		o.flush()
	}
	o.b[o.n] = c
	o.n++
}

func (o *buf) bytes(p []byte) {
	if len(p) > len(o.b)-o.n {
		o.flush()
		if len(p) > len(o.b)/2 {
			o.w.Write(p)
			return
		}
	}
	o.n += copy(o.b[o.n:], p)
}

// Write writes the canonical form of the JSON value in b to w. It returns
// ErrSyntax, having written nothing, if b is not one JSON value.
func (c *Canon) Write(w Writer, b []byte) error {
	if len(b) > math.MaxInt32-1 {
		return ErrSyntax
	}
	c.in, c.nodes, c.canon = b, c.nodes[:0], true
	defer func() { c.in = nil }()
	i, ok := c.parse(skipWS(b, 0, &c.canon), 0)
	if !ok || skipWS(b, i, &c.canon) != len(b) {
		return ErrSyntax
	}
	if c.canon {
		w.Write(b)
		return nil
	}
	c.out.w = w
	c.emit(0)
	c.out.flush()
	c.out.w = nil
	return nil
}

// Append appends the canonical form of b to dst.
func (c *Canon) Append(dst, b []byte) ([]byte, error) {
	a := appender{dst}
	err := c.Write(&a, b)
	return a.b, err
}

// Canonical reports whether b is one JSON value in canonical form.
func (c *Canon) Canonical(b []byte) bool {
	c.in, c.nodes, c.canon = b, c.nodes[:0], true
	defer func() { c.in = nil }()
	i, ok := c.parse(skipWS(b, 0, &c.canon), 0)
	return ok && skipWS(b, i, &c.canon) == len(b) && c.canon
}

type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) { a.b = append(a.b, p...); return len(p), nil }
func (a *appender) WriteString(s string) (int, error) {
	a.b = append(a.b, s...)
	return len(s), nil
}

// skipWS skips JSON whitespace from i; any makes the input non-canonical.
func skipWS(b []byte, i int, canon *bool) int {
	j := i
	for j < len(b) && (b[j] == ' ' || b[j] == '\n' || b[j] == '\t' || b[j] == '\r') {
		j++
	}
	if j != i {
		*canon = false
	}
	return j
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// parse tokenises the value at b[i:] into c.nodes and returns its end.
func (c *Canon) parse(i, depth int) (int, bool) {
	b := c.in
	if i >= len(b) || depth > maxDepth {
		return i, false
	}
	at := len(c.nodes)
	c.nodes = append(c.nodes, node{start: int32(i)})
	var end int
	var ok bool
	switch ch := b[i]; {
	case ch == '"':
		var fix bool
		end, fix, ok = scanString(b, i)
		c.nodes[at].kind, c.nodes[at].fix = kString, fix
	case ch == '{':
		c.nodes[at].kind = kObject
		end, ok = c.parseContainer(i, depth, '}')
	case ch == '[':
		c.nodes[at].kind = kArray
		end, ok = c.parseContainer(i, depth, ']')
	case ch == '-' || ch >= '0' && ch <= '9':
		var fix bool
		end, fix, ok = scanNumber(b, i)
		c.nodes[at].kind, c.nodes[at].fix = kNumber, fix
	default:
		c.nodes[at].kind = kLiteral
		end, ok = scanLiteral(b, i)
	}
	if !ok {
		return end, false
	}
	if c.nodes[at].fix {
		c.canon = false
	}
	c.nodes[at].end, c.nodes[at].next = int32(end), int32(len(c.nodes))
	return end, true
}

func scanLiteral(b []byte, i int) (int, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return i, false
}

// parseContainer tokenises the object (end '}') or the array (end ']') at
// b[i]. An object's keys must be in increasing order (duplicates kept in
// theirs) for the input to be canonical.
func (c *Canon) parseContainer(i, depth int, end byte) (int, bool) {
	b := c.in
	i = skipWS(b, i+1, &c.canon)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	prev := -1 // an object's previous key's node
	for {
		var ok bool
		if end == '}' {
			if i, ok = c.parseKey(i, depth, &prev); !ok {
				return i, false
			}
		}
		if i, ok = c.parse(i, depth+1); !ok {
			return i, false
		}
		i = skipWS(b, i, &c.canon)
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		if i >= len(b) || b[i] != ',' {
			return i, false
		}
		i = skipWS(b, i+1, &c.canon)
	}
}

// parseKey tokenises the key at b[i] and the colon after it, and returns
// where the member's value starts. A key ordered before *prev, the
// object's previous key's node, makes the input not canonical.
func (c *Canon) parseKey(i, depth int, prev *int) (int, bool) {
	b := c.in
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	k := len(c.nodes)
	j, ok := c.parse(i, depth+1)
	if !ok {
		return j, false
	}
	if *prev >= 0 && c.canon && compareKeys(c.raw(*prev), c.raw(k)) > 0 {
		c.canon = false
	}
	*prev = k
	i = skipWS(b, j, &c.canon)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipWS(b, i+1, &c.canon), true
}

// raw is the content of string node k, without its quotes.
func (c *Canon) raw(k int) []byte {
	n := c.nodes[k]
	return c.in[n.start+1 : n.end-1]
}

// emit writes node k and its subtree in canonical form.
func (c *Canon) emit(k int32) {
	n := c.nodes[k]
	switch n.kind {
	case kString:
		if n.fix {
			c.emitString(c.in[n.start+1 : n.end-1])
		} else {
			c.out.bytes(c.in[n.start:n.end])
		}
	case kNumber:
		if n.fix {
			c.emitNumber(c.in[n.start:n.end])
		} else {
			c.out.bytes(c.in[n.start:n.end])
		}
	case kLiteral:
		c.out.bytes(c.in[n.start:n.end])
	case kArray:
		c.out.byte('[')
		for e := k + 1; e < n.next; e = c.nodes[e].next {
			if e != k+1 {
				c.out.byte(',')
			}
			c.emit(e)
		}
		c.out.byte(']')
	case kObject:
		c.emitObject(k)
	}
}

// emitObject writes object k's members sorted by key.
func (c *Canon) emitObject(k int32) {
	n := c.nodes[k]
	base := len(c.mem)
	for e := k + 1; e < n.next; e = c.nodes[c.nodes[e].next].next {
		m := member{key: e}
		if key := c.nodes[e]; key.fix {
			ks := len(c.keys)
			c.keys = appendUnescaped(c.keys, c.in[key.start+1:key.end-1])
			m.ks, m.ke, m.scratch = int32(ks), int32(len(c.keys)), true
		} else {
			m.ks, m.ke = key.start+1, key.end-1
		}
		c.mem = append(c.mem, m)
	}
	ms := c.mem[base:]
	if len(ms) <= 16 { // insertion sort: stable, and no call per comparison
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && compareKeys(c.keyOf(ms[j-1]), c.keyOf(ms[j])) > 0; j-- {
				ms[j-1], ms[j] = ms[j], ms[j-1]
			}
		}
	} else {
		slices.SortStableFunc(ms, func(a, b member) int { return compareKeys(c.keyOf(a), c.keyOf(b)) })
	}
	c.out.byte('{')
	for i := base; i < len(c.mem); i++ {
		if i != base {
			c.out.byte(',')
		}
		key := c.mem[i].key
		c.emit(key)
		c.out.byte(':')
		c.emit(c.nodes[key].next)
	}
	c.out.byte('}')
	c.mem = c.mem[:base]
	if base == 0 {
		c.keys = c.keys[:0]
	}
}

func (c *Canon) keyOf(m member) []byte {
	if m.scratch {
		return c.keys[m.ks:m.ke]
	}
	return c.in[m.ks:m.ke]
}

// compareKeys orders two decoded keys by their UTF-16 code units (RFC 8785
// §3.2.3). UTF-8 byte order is code point order, which differs from it
// only between a supplementary character (a surrogate pair in UTF-16) and
// one of U+E000–U+FFFF, so bytes are compared up to the first difference
// and only the characters there are decoded.
func compareKeys(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	switch {
	case i == len(a) && i == len(b):
		return 0
	case i == len(a):
		return -1
	case i == len(b):
		return 1
	}
	if a[i] < 0xEE && b[i] < 0xEE {
		// Neither character is at or above U+E000: plain byte order.
		return int(a[i]) - int(b[i])
	}
	for i > 0 && a[i]&0xC0 == 0x80 {
		i--
	}
	ra, rb := decodeLenient(a[i:]), decodeLenient(b[i:])
	ua, ub := firstUnit(ra), firstUnit(rb)
	switch {
	case ua != ub:
		return int(ua) - int(ub)
	case ra != rb:
		return int(ra) - int(rb)
	}
	return int(a[i]) - int(b[i]) // invalid UTF-8 (the runner rejects it): bytes
}

// firstUnit is the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r >= 0x10000 {
		r1, _ := utf16.EncodeRune(r)
		return r1
	}
	return r
}

// decodeLenient decodes the first character of p, including a surrogate
// encoded on its own (as appendUnescaped writes a lone surrogate escape).
func decodeLenient(p []byte) rune {
	r, n := utf8.DecodeRune(p)
	if r == utf8.RuneError && n == 1 && len(p) >= 3 && p[0] == 0xED {
		return rune(p[0]&0x0F)<<12 | rune(p[1]&0x3F)<<6 | rune(p[2]&0x3F)
	}
	return r
}
