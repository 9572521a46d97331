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

// dupChecker keeps its stacks in arrays of its own, spilling into slices
// only past them: a slice it grew itself would make every line allocate.
type dupChecker struct {
	fa    [8]dupFrame
	fmore []dupFrame
	nf    int // open containers
	ka    [32]span
	kmore []span
	nk    int    // the keys of the open objects, innermost last
	name  span   // the key just read: the name of the value that follows
	dup   string // the first repeated key's path
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
			if d.nf == maxDepth {
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
			d.push(dupFrame{obj: c == '{', name: d.name, start: d.nk})
			d.name = noName // an array's first element has no name
			if c == '{' {
				if i, ok = d.readKey(b, i); !ok {
					return "", false
				}
				d.add(b)
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
		if i, ok = d.close(b, i); !ok || d.nf == 0 {
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
		if d.nf == 0 {
			return i, true
		}
		if i >= len(b) {
			return i, false
		}
		top := d.frame(d.nf - 1)
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
		d.nk = top.start
		d.nf--
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
	top := d.frame(d.nf - 1)
	name := text(b, d.name)
	if top.set != nil {
		if _, dup := top.set[string(name)]; dup {
			d.dup = d.path(b)
			return
		}
		top.set[string(name)] = struct{}{}
	} else {
		for i := top.start; i < d.nk; i++ {
			if bytes.Equal(text(b, d.key(i)), name) {
				d.dup = d.path(b)
				return
			}
		}
		if d.nk-top.start == maxLinear {
			top.set = make(map[string]struct{}, 2*maxLinear)
			for i := top.start; i < d.nk; i++ {
				top.set[string(text(b, d.key(i)))] = struct{}{}
			}
			top.set[string(name)] = struct{}{}
		}
	}
	d.addKey(d.name)
}

// path names d.name with the containers around it.
func (d *dupChecker) path(b []byte) string {
	var p strings.Builder
	for i := range d.nf {
		f := d.frame(i)
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

func (d *dupChecker) frame(i int) *dupFrame {
	if i < len(d.fa) {
		return &d.fa[i]
	}
	return &d.fmore[i-len(d.fa)]
}

func (d *dupChecker) push(f dupFrame) {
	if d.nf < len(d.fa) {
		d.fa[d.nf] = f
	} else {
		d.fmore = append(d.fmore[:d.nf-len(d.fa)], f)
	}
	d.nf++
}

func (d *dupChecker) key(i int) span {
	if i < len(d.ka) {
		return d.ka[i]
	}
	return d.kmore[i-len(d.ka)]
}

func (d *dupChecker) addKey(k span) {
	if d.nk < len(d.ka) {
		d.ka[d.nk] = k
	} else {
		d.kmore = append(d.kmore[:d.nk-len(d.ka)], k)
	}
	d.nk++
}
