package jsonvalid

import (
	"bytes"
	"encoding/json"
	"strings"
)

// DuplicateKey validates b as Valid does and, in the same pass, looks for an
// object that names a key twice. ok is false if b is not valid JSON; dup is
// the first repeated key's path ("body.model", "messages[].role"), "" if
// every object's keys are distinct.
//
// Readers disagree on a repeated key: gjson (llmrun) takes the first, most
// servers the last, so an estimate, a price or a custom_id could be read
// from a value the server never sees. Keys are compared as decoded strings
// ("a" and "\u0061" are one key).
func DuplicateKey(b []byte) (dup string, ok bool) {
	var d dupChecker // on the stack: no allocation for a usual line
	return d.check(b)
}

// maxLinear is how many keys an object compares a new key with one by one
// before it keeps them in a map.
const maxLinear = 16

// span is a key: b[off:end], with dec a string with escapes (decoded
// when compared: rare in keys). end < 0: none.
type span struct {
	off, end int
	dec      bool
}

var noName = span{end: -1}

// dupFrame is an open container.
type dupFrame struct {
	obj   bool
	name  span // the key whose value it is; noName at the top or in an array
	start int  // its first key in dupChecker.keys
	set   map[string]struct{}
}

// dupChecker is the walk's state, on the caller's stack.
type dupChecker struct {
	frames spill[dupFrame, [8]dupFrame] // the open containers
	keys   spill[span, [32]span]        // the keys of the open objects, innermost last
	name   span                         // the key just read: the name of the value that follows
	dup    string                       // the first repeated key's path
}

// text is a key's bytes, decoded if it has escapes.
func text(b []byte, k span) []byte {
	if k.dec {
		return unquote(b[k.off-1 : k.end+1])
	}
	return b[k.off:k.end]
}

func (d *dupChecker) check(b []byte) (string, bool) {
	i := skipSpace(b, 0)
	d.name = noName
	for {
		if i >= len(b) {
			return "", false
		}
		ok := true
		switch c := b[i]; c {
		case '{', '[':
			if d.frames.n == maxDepth {
				return "", false
			}
			var empty bool
			if i, empty = open(b, i); empty {
				break
			}
			d.frames.push(dupFrame{obj: c == '{', name: d.name, start: d.keys.n})
			d.name = noName // an array's first element has no name
			if c == '{' {
				if i, ok = d.readKey(b, i); !ok {
					return "", false
				}
				d.add(b)
			}
			continue
		case '"':
			i, ok = str(b, i+1) // most of the bytes: called directly
		default:
			i, ok = bare(b, i)
		}
		if !ok {
			return "", false
		}
		if i, ok = d.close(b, i); !ok || d.frames.n == 0 {
			if !ok || i != len(b) {
				return "", false
			}
			return d.dup, true
		}
	}
}

// close closes the containers a value at i ends, up to one that takes
// another member (whose key it reads). It returns where the next value
// starts, or with no frame left where the space after the value ends.
func (d *dupChecker) close(b []byte, i int) (int, bool) {
	for {
		i = skipSpace(b, i)
		if d.frames.n == 0 {
			return i, true
		}
		if i >= len(b) {
			return i, false
		}
		top := d.frames.at(d.frames.n - 1)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
			if !top.obj {
				d.name = noName
				return i, true
			}
			var ok bool
			if i, ok = d.readKey(b, i); !ok {
				return i, false
			}
			d.add(b)
			return i, true
		}
		if (top.obj && b[i] != '}') || (!top.obj && b[i] != ']') {
			return i, false
		}
		d.keys.n = top.start
		d.frames.n--
		i++
	}
}

// key reads `"name" :` into d.name and returns where the value starts.
func (d *dupChecker) readKey(b []byte, i int) (int, bool) {
	start := i + 1
	j, ok := key(b, i)
	if !ok {
		return j, false
	}
	end := bytes.LastIndexByte(b[start:j], '"') + start
	d.name = span{off: start, end: end}
	if bytes.IndexByte(b[start:end], '\\') >= 0 {
		d.name.dec = true // decoded when compared
	}
	return j, true
}

// add records d.name as a key of the innermost object, and the first key
// an object has twice in d.dup.
func (d *dupChecker) add(b []byte) {
	if d.dup != "" {
		return // the rest is only validated
	}
	top := d.frames.at(d.frames.n - 1)
	name := text(b, d.name)
	if top.set != nil {
		if _, dup := top.set[string(name)]; dup {
			d.dup = d.path(b)
			return
		}
		top.set[string(name)] = struct{}{}
	} else {
		for i := top.start; i < d.keys.n; i++ {
			if bytes.Equal(text(b, *d.keys.at(i)), name) {
				d.dup = d.path(b)
				return
			}
		}
		if d.keys.n-top.start == maxLinear {
			top.set = make(map[string]struct{}, 2*maxLinear)
			for i := top.start; i < d.keys.n; i++ {
				top.set[string(text(b, *d.keys.at(i)))] = struct{}{}
			}
			top.set[string(name)] = struct{}{}
		}
	}
	d.keys.push(d.name)
}

// path names d.name with the containers around it.
func (d *dupChecker) path(b []byte) string {
	var p strings.Builder
	for i := range d.frames.n {
		f := d.frames.at(i)
		if f.name.end >= 0 {
			if p.Len() > 0 {
				p.WriteByte('.')
			}
			p.Write(text(b, f.name))
		}
		if !f.obj {
			p.WriteString("[]")
		}
	}
	if p.Len() > 0 {
		p.WriteByte('.')
	}
	name := text(b, d.name)
	if len(name) == 0 {
		p.WriteString(`""`) // the empty key
	}
	p.Write(name)
	return p.String()
}

// unquote decodes a valid JSON string with escapes (rare in keys).
func unquote(q []byte) []byte {
	var s string
	json.Unmarshal(q, &s) // valid: str checked it
	return []byte(s)
}

// spill is a stack that keeps its first items in an array of its own,
// spilling into a slice only past them: a slice it grew itself would make
// every line allocate.
type spill[T any, A [8]T | [32]T] struct {
	arr  A
	more []T
	n    int
}

func (s *spill[T, A]) at(i int) *T {
	if i < len(s.arr) {
		return &s.arr[i]
	}
	return &s.more[i-len(s.arr)]
}

func (s *spill[T, A]) push(v T) {
	if s.n < len(s.arr) {
		s.arr[s.n] = v
	} else {
		s.more = append(s.more[:s.n-len(s.arr)], v)
	}
	s.n++
}
