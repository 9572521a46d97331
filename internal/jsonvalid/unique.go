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
	var d dupChecker
	return d.check(b)
}

// maxLinear is how many keys an object compares a new key with one by one
// before it keeps them in a map.
const maxLinear = 16

// dupFrame is an open container.
type dupFrame struct {
	obj   bool
	name  []byte // the key whose value it is; nil at the top or in an array
	start int    // its first key in dupChecker.keys
	set   map[string]struct{}
}

type dupChecker struct {
	frames []dupFrame
	keys   [][]byte // the keys of the open objects, innermost last
	name   []byte   // the key just read: the name of the value that follows
	dup    string   // the first repeated key's path
}

func (d *dupChecker) check(b []byte) (string, bool) {
	i := skipSpace(b, 0)
	for {
		if i >= len(b) {
			return "", false
		}
		ok := true
		switch c := b[i]; c {
		case '{', '[':
			if len(d.frames) == maxDepth {
				return "", false
			}
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == end {
				i++
				break
			}
			d.frames = append(d.frames, dupFrame{obj: c == '{', name: d.name, start: len(d.keys)})
			d.name = nil // an array's first element has no name
			if c == '{' {
				if i, ok = d.key(b, i); !ok {
					return "", false
				}
				d.add()
			}
			continue
		case '"':
			i, ok = str(b, i+1)
		case 't':
			i, ok = literal(b, i, "true")
		case 'f':
			i, ok = literal(b, i, "false")
		case 'n':
			i, ok = literal(b, i, "null")
		default:
			i, ok = number(b, i)
		}
		if !ok {
			return "", false
		}
		if i, ok = d.close(b, i); !ok || len(d.frames) == 0 {
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
		if len(d.frames) == 0 {
			return i, true
		}
		if i >= len(b) {
			return i, false
		}
		top := &d.frames[len(d.frames)-1]
		if b[i] == ',' {
			i = skipSpace(b, i+1)
			if !top.obj {
				d.name = nil
				return i, true
			}
			var ok bool
			if i, ok = d.key(b, i); !ok {
				return i, false
			}
			d.add()
			return i, true
		}
		if (top.obj && b[i] != '}') || (!top.obj && b[i] != ']') {
			return i, false
		}
		d.keys = d.keys[:top.start]
		d.frames = d.frames[:len(d.frames)-1]
		i++
	}
}

// key reads `"name" :` into d.name and returns where the value starts.
func (d *dupChecker) key(b []byte, i int) (int, bool) {
	start := i + 1
	j, ok := key(b, i)
	if !ok {
		return j, false
	}
	end := bytes.LastIndexByte(b[start:j], '"') + start
	d.name = b[start:end]
	if bytes.IndexByte(d.name, '\\') >= 0 {
		var s string
		if json.Unmarshal(b[start-1:end+1], &s) != nil {
			return j, false
		}
		d.name = []byte(s)
	}
	return j, true
}

// add records d.name as a key of the innermost object, and the first key
// an object has twice in d.dup.
func (d *dupChecker) add() {
	if d.dup != "" {
		return // the rest is only validated
	}
	top := &d.frames[len(d.frames)-1]
	own := d.keys[top.start:]
	if top.set != nil {
		if _, dup := top.set[string(d.name)]; dup {
			d.dup = d.path()
			return
		}
		top.set[string(d.name)] = struct{}{}
	} else {
		for _, k := range own {
			if bytes.Equal(k, d.name) {
				d.dup = d.path()
				return
			}
		}
		if len(own) == maxLinear {
			top.set = make(map[string]struct{}, 2*maxLinear)
			for _, k := range own {
				top.set[string(k)] = struct{}{}
			}
			top.set[string(d.name)] = struct{}{}
		}
	}
	d.keys = append(d.keys, d.name)
}

// path names d.name with the containers around it.
func (d *dupChecker) path() string {
	var p strings.Builder
	for _, f := range d.frames {
		if f.name != nil {
			if p.Len() > 0 {
				p.WriteByte('.')
			}
			p.Write(f.name)
		}
		if !f.obj {
			p.WriteString("[]")
		}
	}
	if p.Len() > 0 {
		p.WriteByte('.')
	}
	if len(d.name) == 0 {
		p.WriteString(`""`) // the empty key
	}
	p.Write(d.name)
	return p.String()
}
