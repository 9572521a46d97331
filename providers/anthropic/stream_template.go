package anthropic

import (
	"bytes"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
)

// deltaTpl is the last content_block_delta event that grew one string
// field of its block and did nothing else, cut around that string's
// inside. An event of the same name and the same bytes around another
// valid string inside is the same delta with other text: the rest of it
// is valid JSON and names the same block and field, so only the new text
// is checked and appended (a token's delta is walked whole otherwise, most
// of decoding a stream).
type deltaTpl struct {
	name  []byte // the SSE event name it came with
	pre   []byte // up to the text's inside; empty: no template
	post  []byte // from the text's closing quote to the end
	b     *block
	field int // index in b.fields
}

// deltaWalk is what walking one delta did: how many string fields it
// grew (and the last one's raw value, aliasing the event), and whether
// anything else not idempotent ran (partial_json, a citation).
type deltaWalk struct {
	appends int
	other   bool
	value   string
	field   int
}

// sameDelta applies data when it is the last text delta with other text,
// reporting whether it was.
func (a *assembler) sameDelta(name, data []byte) bool {
	t := &a.tpl
	if len(t.pre) == 0 || !bytes.Equal(name, t.name) || !bytes.HasPrefix(data, t.pre) {
		return false
	}
	start := len(t.pre)
	n, ok := jsonvalid.StringEnd(data[start:])
	if !ok || !bytes.Equal(data[start+n:], t.post) {
		return false // walked, and refused there if invalid
	}
	f := &t.b.fields[t.field]
	f.val = append(f.val, data[start:start+n]...)
	a.content = a.content || n > 0
	return true
}

// keepDelta makes data, a delta just walked into b, the template for the
// next ones if growing one string field was all it did.
func (a *assembler) keepDelta(name, data []byte, b *block) {
	t, w := &a.tpl, &a.walk
	t.pre = t.pre[:0]
	if w.appends != 1 || w.other {
		return
	}
	start, end := providers.RawInside(data, w.value)
	if start < 0 {
		return
	}
	t.name = append(t.name[:0], name...)
	t.pre = append(t.pre, data[:start]...)
	t.post = append(t.post[:0], data[end:]...)
	t.b, t.field = b, w.field
}
