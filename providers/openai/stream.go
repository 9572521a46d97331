package openai

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
	"github.com/tidwall/gjson"
)

// assembler rebuilds a non-streaming chat.completion body from stream
// chunks. Text is kept JSON-escaped exactly as it arrived: concatenating
// the insides of JSON string literals gives a valid literal (escapes never
// span chunks, and a surrogate pair split across chunks is rejoined), so no
// delta is ever unescaped or re-escaped. Per chunk it allocates nothing
// beyond the growth of the buffers it keeps.
type assembler struct {
	// Raw JSON values from the first chunk that carried them (id, created
	// and model: that carried a non-empty one, as Azure's first chunk has
	// "" and 0).
	id, created, modelRaw, fingerprint, tier []byte
	// filters is Azure's prompt_filter_results, from the chunk that had it.
	filters []byte
	choices []*choice
	usage   []byte // raw, from the final usage chunk
	// content is set once any delta carried text or a tool call: the
	// moment TTFT measures.
	content bool
	scratch *choice // the choice being updated by the current chunk
	err     *providers.Error
	// head is the last chunk's leading members up to its first choices,
	// usage or error member: the id, object, created, model and so on that
	// every chunk repeats byte for byte. Applying them again changes
	// nothing, so a chunk that starts with head is checked and walked from
	// there on. walked and headEnd find it while a whole chunk is walked.
	head    []byte
	walked  string
	headEnd int
	// tpl is the last walked chunk that appended one string and did
	// nothing else not idempotent; walk counts what the current one does.
	tpl  textChunk
	walk walkNote
}

// textChunk is a chunk that added one piece of text (one token, in the
// common case), cut around that string's inside and, after it, around the
// inside of one string member the assembler ignores (OpenAI's
// obfuscation, different in every chunk). A chunk of the same bytes
// around other valid string insides is the same chunk with other text:
// the rest of it is valid, and applying it again changes nothing, so only
// the new text is checked and appended.
type textChunk struct {
	pre   []byte // up to the text's inside; empty: no template
	mid   []byte // from the text's closing quote to the hole's inside; nil: no hole
	post  []byte // from the last closing quote to the end
	ch    *choice
	field int // index in ch.fields
}

// walkNote is what walking one chunk did: how many strings it appended to
// message fields (and the last one, raw, aliasing the chunk), whether
// anything else not idempotent ran (tool call arguments, logprobs items),
// and the first ignored string member after the text.
type walkNote struct {
	appends int
	other   bool
	value   string
	hole    string
	ch      *choice
	field   int
}

type choice struct {
	index    int
	role     []byte // raw JSON string
	fields   []field
	calls    []toolCall
	finish   []byte // raw; nil until a non-null finish_reason
	logprobs logprobs
	// filter is Azure's content_filter_results: the last non-empty one
	// (each chunk's covers the text so far; the closing chunk's is {}).
	filter []byte
}

// field is one string field of the message (content, refusal, and any
// other string a server streams, such as reasoning_content), escaped.
// firstText is the capacity a text field starts with.
const firstText = 512

type field struct {
	key string // raw key as received, quotes included
	buf []byte
}

type toolCall struct {
	index         int
	id, typ, name []byte // raw JSON
	args          []byte // escaped inside of the arguments string
}

// logprobs accumulates the items of logprobs.content and logprobs.refusal.
type logprobs struct {
	seen             bool
	content, refusal []byte // comma-separated raw items
	hasC, hasR       bool
}

// view returns b as a string without copying. The raw slices taken from it
// alias b, which the SSE decoder reuses, so they are used within the event
// and everything kept is copied out with append.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func keep(dst []byte, raw string) []byte { return append(dst[:0], raw...) }

// keepSet is keep for a member whose null says "not in this chunk": dst
// then stays as an earlier chunk set it.
func keepSet(dst []byte, raw string) []byte {
	if raw == "null" {
		return dst
	}
	return keep(dst, raw)
}

// chunk applies one data event. An "error" member ends the stream.
func (a *assembler) chunk(data []byte) *providers.Error {
	if a.sameShape(data) {
		return nil
	}
	a.walk = walkNote{}
	s := view(data)
	// The rest of a chunk that starts with head is valid JSON exactly when
	// the chunk is: a valid JSON prefix ending in a comma between members
	// leaves the parser in one state whatever it was.
	if h := len(a.head); h > 0 && len(data) > h && bytes.HasPrefix(data, a.head) {
		if !jsonvalid.ObjectTail(data[h:]) {
			return providers.MidStream("stream chunk is not valid JSON", data)
		}
		providers.EachMemberFrom(s, h, a.topLevel)
	} else {
		if !jsonvalid.Valid(data) {
			return providers.MidStream("stream chunk is not valid JSON", data)
		}
		a.walked, a.headEnd = s, 0
		providers.EachMember(s, a.topLevel)
		a.keepHead(s)
	}
	if a.err != nil {
		a.err.Body = append([]byte(nil), data...)
		return a.err
	}
	a.keepText(data)
	return nil
}

// sameShape applies data when it is the last text chunk with other text
// (and another hole), reporting whether it was.
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
	end := start + n
	rest := data[end:]
	if t.mid != nil {
		if !bytes.HasPrefix(rest, t.mid) {
			return false
		}
		rest = rest[len(t.mid):]
		h, ok := jsonvalid.StringEnd(rest)
		if !ok {
			return false
		}
		rest = rest[h:]
	}
	if !bytes.Equal(rest, t.post) {
		return false
	}
	f := &t.ch.fields[t.field]
	f.buf = append(f.buf, data[start:end]...)
	if end > start {
		a.content = true
	}
	return true
}

// keepText makes data, just walked, the text chunk to compare the next
// ones with, if appending one string was all it did.
func (a *assembler) keepText(data []byte) {
	w := &a.walk
	t := &a.tpl
	t.pre = t.pre[:0]
	if w.appends != 1 || w.other {
		return
	}
	// Raw values, quotes included, are never empty, so they have the
	// address of their place in data (an empty substring may not).
	start, end := providers.RawInside(data, w.value)
	if start < 0 {
		return
	}
	t.ch, t.field = w.ch, w.field
	t.pre = append(t.pre, data[:start]...)
	t.mid = nil
	if hs, he := providers.RawInside(data, w.hole); hs > end {
		t.mid = append(t.mid[:0:0], data[end:hs]...)
		end = he
	}
	t.post = append(t.post[:0], data[end:]...)
}

// keepHead sets head from the chunk s just walked whole.
func (a *assembler) keepHead(s string) {
	a.head = a.head[:0]
	end := a.headEnd
	a.walked, a.headEnd = "", 0
	// Only members followed by a comma: the rest starts at a key.
	if end > 0 && strings.HasSuffix(strings.TrimRight(s[:end], " \t\r\n"), ",") {
		a.head = append(a.head, s[:end]...)
	}
}

func (a *assembler) topLevel(k, v string) bool {
	if a.walked != "" && a.headEnd == 0 {
		switch k {
		case `"choices"`, `"usage"`, `"error"`: // applied once per chunk
			// k aliases walked: its offset there is where the head ends.
			a.headEnd = int(uintptr(unsafe.Pointer(unsafe.StringData(k))) - uintptr(unsafe.Pointer(unsafe.StringData(a.walked))))
		}
	}
	switch k {
	case `"id"`:
		if a.id == nil || (string(a.id) == `""` && v != "null") {
			a.id = keep(a.id, v)
		}
	case `"created"`:
		if a.created == nil || (string(a.created) == `0` && v != "null") {
			a.created = keep(a.created, v)
		}
	case `"model"`:
		if a.modelRaw == nil || (string(a.modelRaw) == `""` && v != "null") {
			a.modelRaw = keep(a.modelRaw, v)
		}
	case `"prompt_filter_results"`:
		if a.filters == nil && v != "null" {
			a.filters = keep(a.filters, v)
		}
	case `"system_fingerprint"`:
		if a.fingerprint == nil || (v != "null" && string(a.fingerprint) == "null") {
			a.fingerprint = keep(a.fingerprint, v)
		}
	case `"service_tier"`:
		if a.tier == nil || v != "null" {
			a.tier = keep(a.tier, v)
		}
	case `"choices"`:
		providers.EachElement(v, a.choice)
	case `"usage"`:
		a.usage = keepSet(a.usage, v)
	case `"object"`, `"obfuscation"`:
		// Ignored: a string here may differ between text chunks.
		if a.walk.appends == 1 && a.walk.hole == "" && len(v) >= 2 && v[0] == '"' {
			a.walk.hole = v
		}
	case `"error"`:
		if v == "null" {
			return true
		}
		a.err = &providers.Error{Class: providers.ClassMidStream}
		if e := gjson.Parse(v); e.IsObject() {
			fillError(a.err, e)
		} else {
			a.err.Message = e.String()
		}
		if a.err.Message == "" {
			a.err.Message = "error event in stream"
		}
		return false
	}
	return true
}

// choice applies one element of a chunk's choices. Members are visited in
// any order, so the index is looked up first.
func (a *assembler) choice(c string) bool {
	idx := providers.ElementIndex(c, -1)
	if idx < 0 {
		return true
	}
	a.scratch = a.get(idx)
	providers.EachMember(c, a.choiceField)
	return true
}

func (a *assembler) choiceField(k, v string) bool {
	ch := a.scratch
	switch k {
	case `"delta"`:
		providers.EachMember(v, a.deltaField)
	case `"finish_reason"`:
		ch.finish = keepSet(ch.finish, v)
	case `"logprobs"`:
		if v != "null" {
			a.walk.other = true
			ch.logprobs.seen = true
			providers.EachMember(v, a.logprobField)
		}
	case `"content_filter_results"`:
		if v != "null" && v != "{}" {
			ch.filter = keep(ch.filter, v)
		}
	}
	return true
}

func (a *assembler) logprobField(k, v string) bool {
	lp := &a.scratch.logprobs
	var dst *[]byte
	switch k {
	case `"content"`:
		dst = &lp.content
		lp.hasC = lp.hasC || v != "null"
	case `"refusal"`:
		dst = &lp.refusal
		lp.hasR = lp.hasR || v != "null"
	default:
		return true
	}
	providers.EachElement(v, func(item string) bool {
		if len(*dst) > 0 {
			*dst = append(*dst, ',')
		}
		*dst = append(*dst, item...)
		return true
	})
	return true
}

func (a *assembler) deltaField(k, v string) bool {
	ch := a.scratch
	switch k {
	case `"role"`:
		ch.role = keepSet(ch.role, v)
	case `"tool_calls"`:
		a.walk.other = true
		providers.EachElement(v, a.toolCall)
	default:
		if in, ok := providers.StringInside(v); ok {
			i := ch.fieldIndex(k)
			f := &ch.fields[i]
			f.buf = append(f.buf, in...)
			if in != "" {
				a.content = true
			}
			a.walk = walkNote{appends: a.walk.appends + 1, other: a.walk.other, value: v, ch: ch, field: i}
		}
	}
	return true
}

// toolCall applies one tool_calls delta: the first carries id, type and
// function.name; later ones carry fragments of function.arguments.
func (a *assembler) toolCall(v string) bool {
	ch := a.scratch
	r := gjson.Parse(v)
	idx := int(r.Get("index").Int())
	var tc *toolCall
	for i := range ch.calls {
		if ch.calls[i].index == idx {
			tc = &ch.calls[i]
		}
	}
	if tc == nil {
		ch.calls = append(ch.calls, toolCall{index: idx})
		tc = &ch.calls[len(ch.calls)-1]
	}
	a.content = true
	if id := r.Get("id"); id.Type == gjson.String {
		tc.id = keep(tc.id, id.Raw)
	}
	if t := r.Get("type"); t.Type == gjson.String {
		tc.typ = keep(tc.typ, t.Raw)
	}
	providers.EachMember(r.Get("function").Raw, func(k, v string) bool {
		switch k {
		case `"name"`:
			if v != "null" {
				tc.name = keep(tc.name, v)
			}
		case `"arguments"`:
			if in, ok := providers.StringInside(v); ok {
				tc.args = append(tc.args, in...)
			}
		}
		return true
	})
	return true
}

// get returns the choice with index i, creating it.
func (a *assembler) get(i int) *choice {
	return providers.ByIndex(&a.choices, i, (*choice).at, func(i int) *choice { return &choice{index: i} })
}

func (c *choice) at() int { return c.index }

// fieldIndex returns the index of the field with raw key k, creating it.
func (c *choice) fieldIndex(k string) int {
	for i := range c.fields {
		if c.fields[i].key == k {
			return i
		}
	}
	// k aliases the decoder's buffer: copy it, once per field and stream.
	// The text starts with room for a short answer, which grown from empty
	// took seven allocations.
	c.fields = append(c.fields, field{key: string([]byte(k)), buf: make([]byte, 0, firstText)})
	return len(c.fields) - 1
}

func (c *choice) lookup(key string) *field {
	for i := range c.fields {
		if c.fields[i].key == key {
			return &c.fields[i]
		}
	}
	return nil
}

// body writes the chat.completion the stream amounted to, in the field
// order of a non-streaming answer.
func (a *assembler) body() []byte {
	n := 256 + len(a.usage) + len(a.filters)
	for _, c := range a.choices {
		for _, f := range c.fields {
			n += len(f.buf) + len(f.key) + 8
		}
		for _, t := range c.calls {
			n += len(t.args) + 128
		}
		n += len(c.logprobs.content) + len(c.logprobs.refusal) + len(c.filter) + 128
	}
	b := make([]byte, 0, n)
	b = append(b, `{"id":`...)
	b = raw(b, a.id, `""`)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = raw(b, a.created, `0`)
	b = append(b, `,"model":`...)
	b = raw(b, a.modelRaw, `""`)
	if a.tier != nil {
		b = append(b, `,"service_tier":`...)
		b = append(b, a.tier...)
	}
	if a.fingerprint != nil {
		b = append(b, `,"system_fingerprint":`...)
		b = append(b, a.fingerprint...)
	}
	if a.filters != nil {
		b = append(b, `,"prompt_filter_results":`...)
		b = append(b, a.filters...)
	}
	b = append(b, `,"choices":[`...)
	b = providers.AppendByIndex(b, a.choices, (*choice).at, (*choice).appendJSON)
	b = append(b, ']')
	if a.usage != nil {
		b = append(b, `,"usage":`...)
		b = append(b, a.usage...)
	}
	return append(b, '}')
}

func (c *choice) appendJSON(b []byte) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(c.index), 10)
	b = append(b, `,"message":{"role":`...)
	b = raw(b, c.role, `"assistant"`)
	for _, key := range [...]string{`"content"`, `"refusal"`} {
		b = append(b, ',')
		b = append(b, key...)
		b = append(b, ':')
		if f := c.lookup(key); f != nil {
			b = quoted(b, f.buf)
		} else {
			b = append(b, "null"...)
		}
	}
	for _, f := range c.fields {
		if f.key == `"content"` || f.key == `"refusal"` {
			continue
		}
		b = append(b, ',')
		b = append(b, f.key...)
		b = append(b, ':')
		b = quoted(b, f.buf)
	}
	if len(c.calls) > 0 {
		calls := slices.Clone(c.calls)
		slices.SortStableFunc(calls, func(x, y toolCall) int { return x.index - y.index })
		b = append(b, `,"tool_calls":[`...)
		for i, t := range calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = raw(b, t.id, `""`)
			b = append(b, `,"type":`...)
			b = raw(b, t.typ, `"function"`)
			b = append(b, `,"function":{"name":`...)
			b = raw(b, t.name, `""`)
			b = append(b, `,"arguments":`...)
			b = quoted(b, t.args)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":`...)
	if c.logprobs.seen {
		b = append(b, `{"content":`...)
		b = array(b, c.logprobs.content, c.logprobs.hasC)
		b = append(b, `,"refusal":`...)
		b = array(b, c.logprobs.refusal, c.logprobs.hasR)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"finish_reason":`...)
	b = raw(b, c.finish, "null")
	if c.filter != nil {
		b = append(b, `,"content_filter_results":`...)
		b = append(b, c.filter...)
	}
	return append(b, '}')
}

func raw(b, v []byte, dflt string) []byte {
	if v == nil {
		return append(b, dflt...)
	}
	return append(b, v...)
}

func quoted(b, escaped []byte) []byte {
	b = append(b, '"')
	b = append(b, escaped...)
	return append(b, '"')
}

func array(b, items []byte, has bool) []byte {
	if !has {
		return append(b, "null"...)
	}
	b = append(b, '[')
	b = append(b, items...)
	return append(b, ']')
}

func (a *assembler) model() string { return gjson.Parse(string(a.modelRaw)).String() }

// text is the unescaped content of the first choice.
func (a *assembler) text() string {
	for _, c := range a.choices {
		if c.index != 0 {
			continue
		}
		if f := c.lookup(`"content"`); f != nil {
			if bytes.IndexByte(f.buf, '\\') < 0 {
				return string(f.buf) // nothing escaped: the text as it is
			}
			return gjson.Parse(string(quoted(nil, f.buf))).String()
		}
	}
	return ""
}
