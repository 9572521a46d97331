package gemini

import (
	"bytes"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
)

// usageKey is the member Gemini repeats in every chunk with new counts.
const usageKey = `"usageMetadata"`

// chunkTpl is the last chunk that joined one piece of text to a text part
// and did nothing else not idempotent, cut around that text's inside and,
// after it, around the usageMetadata value that every chunk carries with
// running counts. A chunk of the same bytes around another valid text
// inside and another valid usage value is the same chunk with other text:
// the rest of it sets what it set before, so only the text is checked and
// joined and the usage set (a token's chunk is walked whole otherwise,
// most of decoding a stream).
type chunkTpl struct {
	pre  []byte // up to the text's inside; empty: no template
	mid  []byte // from the text's closing quote to the usage value; nil: no usage
	post []byte // from the end of the usage value (or the text) to the end
	part *part
}

// chunkWalk is what walking one chunk did: the text values it joined (the
// last one raw, aliasing the chunk) and the part, whether it kept a part
// whole (not idempotent), and the usage value after the text.
type chunkWalk struct {
	texts int
	other bool
	text  string
	part  *part
	usage string
}

// sameShape applies data when it is the last text chunk with other text
// and usage, reporting whether it was.
func (a *assembler) sameShape(data []byte) bool {
	t := &a.tpl
	if len(t.pre) == 0 || !bytes.HasPrefix(data, t.pre) {
		return false
	}
	start := len(t.pre)
	n, ok := jsonvalid.StringEnd(data[start:])
	if !ok {
		return false // walked, and refused there if invalid
	}
	rest := data[start+n:]
	var usage []byte
	if t.mid != nil {
		if !bytes.HasPrefix(rest, t.mid) || len(rest) < len(t.mid)+len(t.post) || !bytes.HasSuffix(rest, t.post) {
			return false
		}
		usage = rest[len(t.mid) : len(rest)-len(t.post)]
		if len(usage) == 0 || blank(usage[0]) || blank(usage[len(usage)-1]) || !jsonvalid.Valid(usage) {
			return false
		}
	} else if !bytes.Equal(rest, t.post) {
		return false
	}
	t.part.text = append(t.part.text, data[start:start+n]...)
	a.content = a.content || n > 0
	if usage != nil {
		a.top = set(a.top, usageKey, view(usage))
	}
	return true
}

func blank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// keepShape makes data, just walked, the template for the next chunks if
// joining one text was all it did besides setting members.
func (a *assembler) keepShape(data []byte) {
	t, w := &a.tpl, &a.walk
	t.pre = t.pre[:0]
	if w.texts != 1 || w.other || a.err != nil {
		return
	}
	ts, te := providers.RawInside(data, w.text)
	if ts < 0 {
		return
	}
	t.part = w.part
	t.pre = append(t.pre, data[:ts]...)
	t.mid = nil
	end := te
	if us, ue := providers.RawInside(data, w.usage); us > te {
		// inside trims a byte each side; the usage value is taken whole.
		t.mid = append(t.mid[:0:0], data[te:us-1]...)
		end = ue + 1
	}
	t.post = append(t.post[:0], data[end:]...)
}
