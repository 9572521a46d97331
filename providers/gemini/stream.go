package gemini

import (
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
)

// assembler rebuilds the non-streamed GenerateContentResponse from the
// chunks of an alt=sse stream (wire-formats §5.4). Each chunk carries only
// new text: consecutive text parts of a candidate are joined into one
// part, as the non-streamed answer has them; any other part is kept
// whole. Every other member, of the response or of a candidate, is taken
// from the last chunk that carried it (usageMetadata is cumulative: the
// last one counts, it is never summed). Text is kept JSON-escaped as it
// arrived: the insides of JSON string literals concatenate into a valid
// literal, so no text is unescaped or re-escaped.
type assembler struct {
	// top are the response's members in first-seen order; candidates
	// holds the place of "candidates" among them.
	top   []member
	cands []*candidate
	// content is set once a chunk carried text: the moment TTFT measures.
	content bool
	// finished is set once a candidate carried a finishReason or the
	// prompt was blocked: the answer is complete.
	finished bool
	err      *providers.Error
	cur      *candidate // the candidate the current element applies to
	// tpl is the last text chunk, walk what walking the current one did.
	tpl  chunkTpl
	walk chunkWalk
}

// member is one "key":value pair, raw; key keeps its quotes.
type member struct {
	key string
	val []byte
}

// candidatesKey is the placeholder key of the candidates in top.
const candidatesKey = `"candidates"`

type candidate struct {
	index  int
	fields []member // members besides content, last value wins ("index" included)
	// role and extra are content's members besides parts.
	extra []member
	parts []*part
}

type part struct {
	// text parts: isText, the escaped inside of the joined text, and the
	// other members of the part (thought, thoughtSignature), last wins.
	isText  bool
	thought bool
	text    []byte
	extra   []member
	raw     []byte // any other part, whole
}

// view returns b as a string without copying. Slices taken from it alias
// the decoder's buffer and are copied out before the next event.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// set sets key to val in ms, keeping the first-seen order.
func set(ms []member, key, val string) []member {
	for i := range ms {
		if ms[i].key == key {
			ms[i].val = append(ms[i].val[:0], val...)
			return ms
		}
	}
	return append(ms, member{key: strings.Clone(key), val: []byte(val)})
}

// chunk applies one data event. A top-level "error" ends the stream.
func (a *assembler) chunk(data []byte) *providers.Error {
	if a.sameShape(data) {
		return nil
	}
	s := view(data)
	a.tpl.pre = a.tpl.pre[:0]
	if !jsonvalid.Valid(data) {
		return providers.MidStream("stream chunk is not valid JSON", data)
	}
	a.walk = chunkWalk{}
	providers.EachMember(s, a.topLevel)
	if a.err != nil {
		a.err.Body = append([]byte(nil), data...)
		return a.err
	}
	a.keepShape(data)
	return nil
}

func (a *assembler) topLevel(k, v string) bool {
	switch k {
	case `"error"`:
		if v == "null" {
			return true
		}
		a.err = &providers.Error{Class: providers.ClassMidStream}
		fillError(a.err, gjson.Parse(`{"error":`+v+`}`))
		if a.err.Message == "" {
			a.err.Message = "error event in stream"
		}
		return false
	case candidatesKey:
		a.top = set(a.top, k, "")
		providers.EachElement(v, a.candidate)
	default: // promptFeedback among them
		if k == `"promptFeedback"` && gjson.Get(v, "blockReason").Exists() {
			a.finished = true
		}
		if k == usageKey && a.walk.texts == 1 && a.walk.usage == "" {
			a.walk.usage = v
		}
		a.top = set(a.top, k, v)
	}
	return true
}

// candidate applies one element of a chunk's candidates. Members come in
// any order, so the index is looked up first; a missing one is 0.
func (a *assembler) candidate(c string) bool {
	a.cur = a.get(providers.ElementIndex(c, 0))
	providers.EachMember(c, a.candidateField)
	return true
}

func (a *assembler) candidateField(k, v string) bool {
	ch := a.cur
	switch k {
	case `"content"`:
		providers.EachMember(v, func(k, v string) bool {
			if k == `"parts"` {
				providers.EachElement(v, a.part)
			} else {
				ch.extra = set(ch.extra, k, v)
			}
			return true
		})
	default: // finishReason among them
		if k == `"finishReason"` && v != "null" {
			a.finished = true
		}
		ch.fields = set(ch.fields, k, v)
	}
	return true
}

// part applies one part: text joins the candidate's last text part of the
// same kind (answer or thought); anything else is a part of its own.
func (a *assembler) part(p string) bool {
	ch := a.cur
	var text, raw string
	isText, thought := false, false
	providers.EachMember(p, func(k, v string) bool {
		switch k {
		case `"text"`:
			text, isText = providers.StringInside(v)
			raw = v
		case `"thought"`:
			thought = v == "true"
		}
		return true
	})
	if !isText {
		ch.parts = append(ch.parts, &part{raw: []byte(p)})
		a.content = true
		a.walk.other = true
		return true
	}
	var last *part
	if n := len(ch.parts); n > 0 && ch.parts[n-1].isText && ch.parts[n-1].thought == thought {
		last = ch.parts[n-1]
	} else {
		last = &part{isText: true, thought: thought}
		ch.parts = append(ch.parts, last)
	}
	last.text = append(last.text, text...)
	a.walk.texts++
	a.walk.text, a.walk.part = raw, last
	providers.EachMember(p, func(k, v string) bool {
		if k != `"text"` {
			last.extra = set(last.extra, k, v)
		}
		return true
	})
	if text != "" {
		a.content = true
	}
	return true
}

// get returns the candidate with index i, creating it.
func (a *assembler) get(i int) *candidate {
	return providers.ByIndex(&a.cands, i, func(c *candidate) int { return c.index }, func(i int) *candidate { return &candidate{index: i} })
}

// body writes the response the stream amounted to.
func (a *assembler) body() []byte {
	b := make([]byte, 0, 512)
	b = append(b, '{')
	for i, m := range a.top {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m.key...)
		b = append(b, ':')
		if m.key != candidatesKey {
			b = append(b, m.val...)
			continue
		}
		b = append(b, '[')
		for j, c := range a.cands {
			if j > 0 {
				b = append(b, ',')
			}
			b = c.appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (c *candidate) appendJSON(b []byte) []byte {
	b = append(b, `{"content":{"parts":[`...)
	for i, p := range c.parts {
		if i > 0 {
			b = append(b, ',')
		}
		if !p.isText {
			b = append(b, p.raw...)
			continue
		}
		b = append(b, `{"text":"`...)
		b = append(b, p.text...)
		b = append(b, '"')
		b = appendMembers(b, p.extra)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = appendMembers(b, c.extra)
	b = append(b, '}')
	b = appendMembers(b, c.fields)
	return append(b, '}')
}

// appendMembers appends ms, each preceded by a comma.
func appendMembers(b []byte, ms []member) []byte {
	for _, m := range ms {
		b = append(b, ',')
		b = append(b, m.key...)
		b = append(b, ':')
		b = append(b, m.val...)
	}
	return b
}

// text is the unescaped answer text of the first candidate (thoughts
// excluded).
func (a *assembler) text() string {
	var esc []byte
	for _, c := range a.cands {
		if c.index != 0 {
			continue
		}
		for _, p := range c.parts {
			if p.isText && !p.thought {
				esc = append(esc, p.text...)
			}
		}
	}
	return gjson.Parse(`"` + string(esc) + `"`).Str
}
