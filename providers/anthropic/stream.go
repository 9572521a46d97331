package anthropic

import (
	"slices"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
)

// assembler rebuilds the non-streaming message from stream events
// (wire-formats §2.3). Text is kept JSON-escaped as it arrived: the insides
// of JSON string literals concatenate into a valid literal, so no delta is
// unescaped or re-escaped. Per event it allocates nothing beyond the growth
// of the buffers it keeps.
type assembler struct {
	message []byte   // raw message of message_start
	blocks  []*block // in order of content_block_start
	delta   []member // message_delta.delta members, merged (stop_reason, stop_sequence, ...)
	usage   []member // message_start usage, then each message_delta usage merged over it
	// content is set once a delta carried text: the moment TTFT measures.
	content bool
	started bool
	cur     *block // the block the current delta applies to
	// tpl is the last text delta, walk what walking the current one did.
	tpl  deltaTpl
	walk deltaWalk
}

// member is one raw "key":value pair; key keeps its quotes.
type member struct {
	key string
	val []byte
}

type block struct {
	index     int
	start     []byte   // raw content_block of content_block_start
	fields    []member // string fields grown by deltas (text, thinking, signature, ...), escaped insides
	input     []byte   // escaped inside of the concatenated partial_json
	hasInput  bool
	citations []byte // comma-separated raw citations from citations_delta
}

// view returns b as a string without copying. Slices taken from it alias
// the decoder's buffer and are copied out before the next event.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// event applies one SSE event, dispatched on its name as the SDKs do (the
// JSON type is used only when a proxy dropped the event: line). It
// reports whether the message is complete.
func (a *assembler) event(name, data []byte) (bool, *providers.Error) {
	if a.sameDelta(name, data) {
		return false, nil
	}
	s := view(data)
	if len(data) > 0 && !jsonvalid.Valid(data) {
		return false, providers.MidStream("stream event is not valid JSON", data)
	}
	switch eventName(name, s) {
	case "ping":
	case "message_start":
		a.messageStart(s)
	case "content_block_start":
		return false, a.blockStart(s, data)
	case "content_block_delta":
		return false, a.blockDelta(name, data)
	case "message_delta":
		a.messageDelta(s)
	case "message_stop":
		if !a.started {
			return false, providers.MidStream("message_stop without message_start", data)
		}
		return true, nil
	case "error":
		return false, streamError(s, data)
	}
	// content_block_stop and unknown events carry nothing to keep.
	return false, nil
}

// eventName is the SSE event's name, or its JSON "type" when the event:
// line is missing.
func eventName(name []byte, s string) string {
	n := view(name)
	if n == "" {
		providers.EachMember(s, func(k, v string) bool {
			if k == `"type"` {
				n, _ = providers.StringInside(v)
				return false
			}
			return true
		})
	}
	return n
}

// messageStart keeps the message shell and its opening usage.
func (a *assembler) messageStart(s string) {
	a.started = true
	providers.EachMember(s, func(k, v string) bool {
		if k == `"message"` {
			a.message = append(a.message[:0], v...)
			providers.EachMember(v, func(k, v string) bool {
				if k == `"usage"` {
					a.usage = merge(a.usage, v)
				}
				return true
			})
			return false
		}
		return true
	})
}

// blockStart opens a content block; its raw start is copied, since s
// aliases the decoder's buffer.
func (a *assembler) blockStart(s string, data []byte) *providers.Error {
	idx, blk := indexAnd(s, `"content_block"`)
	if idx < 0 || blk == "" {
		return providers.MidStream("content_block_start without index or block", data)
	}
	a.blocks = append(a.blocks, &block{index: idx, start: []byte(blk)})
	a.tpl.pre = a.tpl.pre[:0] // a block of a repeated index takes the deltas from now on
	return nil
}

// blockDelta grows the block the delta names; a delta for a block that
// never started means the stream lost events.
func (a *assembler) blockDelta(name, data []byte) *providers.Error {
	idx, delta := indexAnd(view(data), `"delta"`)
	a.cur = a.block(idx)
	if a.cur == nil {
		return providers.MidStream("content_block_delta for a block that never started", data)
	}
	a.walk = deltaWalk{}
	providers.EachMember(delta, a.deltaField)
	a.keepDelta(name, data, a.cur)
	return nil
}

// indexAnd reads a block event's "index" (-1 if missing) and its member
// key ("" if missing).
func indexAnd(s, key string) (idx int, v string) {
	idx = -1
	providers.EachMember(s, func(k, val string) bool {
		switch k {
		case `"index"`:
			idx = atoi(val)
		case key:
			v = val
		}
		return true
	})
	return idx, v
}

// messageDelta merges the stop reason and the running usage.
func (a *assembler) messageDelta(s string) {
	providers.EachMember(s, func(k, v string) bool {
		switch k {
		case `"delta"`:
			a.delta = merge(a.delta, v)
		case `"usage"`:
			a.usage = merge(a.usage, v)
		}
		return true
	})
}

// streamError is an error event's failure, classed mid-stream: the answer
// so far is discarded and the request retried whole.
func streamError(s string, data []byte) *providers.Error {
	e := &providers.Error{Class: providers.ClassMidStream, Body: append([]byte(nil), data...)}
	fillError(e, gjson.Parse(s))
	if e.Message == "" {
		e.Message = "error event in stream"
	}
	return e
}

// deltaField applies one member of a content_block_delta's delta. Every
// string member other than type grows the block field of the same name
// (text_delta.text, thinking_delta.thinking, signature_delta.signature, and
// whatever comes next); partial_json and citation are special.
func (a *assembler) deltaField(k, v string) bool {
	b := a.cur
	switch k {
	case `"type"`:
	case `"partial_json"`:
		a.walk.other = true
		if in, ok := providers.StringInside(v); ok {
			b.input = append(b.input, in...)
			b.hasInput = true
			a.content = a.content || in != ""
		}
	case `"citation"`:
		a.walk.other = true
		if len(b.citations) > 0 {
			b.citations = append(b.citations, ',')
		}
		b.citations = append(b.citations, v...)
	default:
		if in, ok := providers.StringInside(v); ok {
			i := b.fieldAt(k)
			f := &b.fields[i]
			f.val = append(f.val, in...)
			a.content = a.content || in != ""
			a.walk = deltaWalk{appends: a.walk.appends + 1, other: a.walk.other, value: v, field: i}
		}
	}
	return true
}

// fieldAt returns the index of the field with raw key k, creating it.
func (b *block) fieldAt(k string) int {
	for i := range b.fields {
		if b.fields[i].key == k {
			return i
		}
	}
	b.fields = append(b.fields, member{key: string([]byte(k))}) // k aliases the decoder's buffer
	return len(b.fields) - 1
}

// block returns the block with index i, searching from the newest.
func (a *assembler) block(i int) *block {
	for j := len(a.blocks) - 1; j >= 0; j-- {
		if a.blocks[j].index == i {
			return a.blocks[j]
		}
	}
	return nil
}

func atoi(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// merge sets every member of the raw object obj into ms, replacing
// members with the same key: message_delta usage is cumulative, so the
// latest value of each count wins, and counts it does not repeat (the
// input side from message_start) stay.
func merge(ms []member, obj string) []member {
	providers.EachMember(obj, func(k, v string) bool {
		for i := range ms {
			if ms[i].key == k {
				ms[i].val = append(ms[i].val[:0], v...)
				return true
			}
		}
		ms = append(ms, member{key: string([]byte(k)), val: []byte(v)})
		return true
	})
	return ms
}

func find(ms []member, k string) *member {
	for i := range ms {
		if ms[i].key == k {
			return &ms[i]
		}
	}
	return nil
}

// body writes the message the stream amounted to: message_start's message
// with content, the message_delta fields and the merged usage put in.
func (a *assembler) body() ([]byte, *providers.Error) {
	content := []byte{'['}
	content = providers.AppendByIndex(content, a.blocks, func(b *block) int { return b.index }, (*block).appendJSON)
	content = append(content, ']')

	out := make([]byte, 0, len(a.message)+len(content)+256)
	out = append(out, '{')
	first := true
	put := func(k string, v []byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, v...)
	}
	var seen []string
	providers.EachMember(view(a.message), func(k, v string) bool {
		seen = append(seen, k)
		switch {
		case k == `"content"`:
			put(k, content)
		case k == `"usage"`:
			put(k, object(a.usage))
		case find(a.delta, k) != nil:
			put(k, find(a.delta, k).val)
		default:
			put(k, []byte(v))
		}
		return true
	})
	for _, m := range a.delta {
		if !slices.Contains(seen, m.key) {
			put(m.key, m.val)
		}
	}
	if !slices.Contains(seen, `"content"`) {
		put(`"content"`, content)
	}
	if !slices.Contains(seen, `"usage"`) && a.usage != nil {
		put(`"usage"`, object(a.usage))
	}
	out = append(out, '}')
	if !gjson.ValidBytes(out) {
		return nil, &providers.Error{Class: providers.ClassMidStream, Message: "reassembled message is not valid JSON"}
	}
	return out, nil
}

func object(ms []member) []byte {
	b := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m.key...)
		b = append(b, ':')
		b = append(b, m.val...)
	}
	return append(b, '}')
}

// appendJSON writes the block: its content_block_start shape with the
// accumulated fields put in. Tool input arrives as fragments of a JSON
// text inside JSON strings; it is unescaped once here and kept as JSON.
func (b *block) appendJSON(out []byte) []byte {
	out = append(out, '{')
	first := true
	put := func(k string, v ...[]byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, k...)
		out = append(out, ':')
		for _, p := range v {
			out = append(out, p...)
		}
	}
	var seen []string
	quote := []byte{'"'}
	providers.EachMember(view(b.start), func(k, v string) bool {
		seen = append(seen, k)
		if f := find(b.fields, k); f != nil {
			in, _ := providers.StringInside(v) // usually "" at start
			put(k, quote, []byte(in), f.val, quote)
			return true
		}
		switch {
		case k == `"input"` && b.hasInput:
			put(k, b.inputJSON([]byte(v)))
		case k == `"citations"` && b.citations != nil:
			put(k, appendCitations([]byte(v), b.citations))
		default:
			put(k, []byte(v))
		}
		return true
	})
	for _, f := range b.fields {
		if !slices.Contains(seen, f.key) {
			put(f.key, quote, f.val, quote)
		}
	}
	if b.hasInput && !slices.Contains(seen, `"input"`) {
		put(`"input"`, b.inputJSON([]byte("{}")))
	}
	if b.citations != nil && !slices.Contains(seen, `"citations"`) {
		put(`"citations"`, appendCitations(nil, b.citations))
	}
	return append(out, '}')
}

// inputJSON is the tool input: the unescaped concatenation of the
// partial_json fragments, or dflt when they were all empty (a tool called
// without arguments). Input that does not parse (a stream cut by
// max_tokens) is kept as a JSON string rather than lost.
func (b *block) inputJSON(dflt []byte) []byte {
	lit := append(append([]byte{'"'}, b.input...), '"')
	text := gjson.ParseBytes(lit).String()
	switch {
	case len(b.input) == 0:
		return dflt
	case gjson.Valid(text):
		return []byte(text)
	}
	return lit
}

func appendCitations(startArr, items []byte) []byte {
	out := []byte{'['}
	providers.EachElement(view(startArr), func(v string) bool {
		out = append(out, v...)
		out = append(out, ',')
		return true
	})
	out = append(out, items...)
	return append(out, ']')
}

// text is the unescaped concatenation of the text blocks' text.
func (a *assembler) text() string {
	lit := []byte{'"'}
	for _, b := range a.blocks {
		if gjson.GetBytes(b.start, "type").String() != "text" {
			continue
		}
		if in, ok := providers.StringInside(gjson.GetBytes(b.start, "text").Raw); ok {
			lit = append(lit, in...)
		}
		if f := find(b.fields, `"text"`); f != nil {
			lit = append(lit, f.val...)
		}
	}
	lit = append(lit, '"')
	return gjson.ParseBytes(lit).String()
}
