package mock

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"
)

// anthropic is the Messages dialect.
type anthropic struct{}

func (anthropic) tag() byte               { return 'a' }
func (anthropic) requestIDHeader() string { return "request-id" }

func (anthropic) parse(body []byte) (*request, *apiError) {
	var in struct {
		Model     string          `json:"model"`
		MaxTokens *int            `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errInvalid("", "invalid request body: "+err.Error())
	}
	if in.MaxTokens == nil {
		return nil, errInvalid("max_tokens", "max_tokens: Field required")
	}
	if *in.MaxTokens < 1 {
		return nil, errInvalid("max_tokens", "max_tokens: Input should be greater than or equal to 1")
	}
	if len(in.Messages) == 0 {
		return nil, errInvalid("messages", "messages: Field required")
	}
	req := &request{model: in.Model, stream: in.Stream, maxTokens: *in.MaxTokens, cacheWrites: true}
	ph := newPrefixHash('a', in.Model)
	if len(in.System) > 0 && string(in.System) != "null" {
		parts, err := contentParts(in.System)
		if err != nil {
			return nil, errInvalid("system", "system: "+err.Error())
		}
		req.addBlocks(ph, "system", parts)
	}
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, errInvalid("messages", "messages."+strconv.Itoa(i)+".role: Input should be 'user' or 'assistant'")
		}
		parts, err := contentParts(m.Content)
		if err != nil {
			return nil, errInvalid("messages", "messages."+strconv.Itoa(i)+".content: "+err.Error())
		}
		req.addBlocks(ph, m.Role, parts)
		if m.Role == "user" {
			req.prompt, _ = contentText(m.Content)
		}
	}
	return req, nil
}

// addBlocks counts one message (or the system prompt) into req's input
// tokens and walks its blocks into ph: each block carrying cache_control
// ends a cacheable prefix, counted as the tokens before it plus those of
// its message up to it.
func (req *request) addBlocks(ph prefixHash, role string, parts []part) {
	ph.write(role)
	for i, p := range parts {
		if p.isText {
			ph.write(p.text)
		} else {
			ph.write(string(p.raw))
		}
		if p.cache {
			req.prefixes = append(req.prefixes, ph.sum(req.inTokens+tokensOf(textLen(parts[:i+1]))+messageOverhead))
		}
	}
	req.inTokens += tokensOf(textLen(parts)) + messageOverhead
}

func (anthropic) errorStatus(e *apiError) int {
	if e.anStatus != 0 {
		return e.anStatus
	}
	return e.status
}

func (anthropic) errorBody(e *apiError, reqID string) []byte {
	msg := e.anMessage
	if msg == "" {
		msg = e.message
	}
	b := append(make([]byte, 0, 256), `{"type":"error","error":{"type":`...)
	b = appendString(b, e.anType)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	if e.anDetailCode != "" {
		b = append(b, `,"details":{"error_code":`...)
		b = appendString(b, e.anDetailCode)
		b = append(b, '}')
	}
	b = append(b, `},"request_id":`...)
	b = appendNullString(b, reqID)
	return append(b, '}')
}

// setLimitHeaders writes anthropic-ratelimit-* for requests, input and
// output tokens, and "tokens" as input+output combined; resets are RFC 3339
// instants, rounded up to the second.
func (anthropic) setLimitHeaders(h http.Header, l limitState, now time.Time) {
	set := func(name string, w window) {
		if !w.set {
			return
		}
		h.Set("anthropic-ratelimit-"+name+"-limit", formatLimit(w.limit))
		h.Set("anthropic-ratelimit-"+name+"-remaining", strconv.FormatInt(w.remaining, 10))
		h.Set("anthropic-ratelimit-"+name+"-reset", rfc3339Ceil(now.Add(w.reset)))
	}
	set("requests", l.requests)
	set("input-tokens", l.input)
	set("output-tokens", l.output)
	tokens := l.input
	if l.output.set {
		if tokens.set {
			tokens.limit += l.output.limit
			tokens.remaining += l.output.remaining
			tokens.reset = time.Duration(math.Max(float64(tokens.reset), float64(l.output.reset)))
		} else {
			tokens = l.output
		}
	}
	set("tokens", tokens)
}

func rfc3339Ceil(t time.Time) string {
	if r := t.Nanosecond(); r != 0 {
		t = t.Add(time.Second - time.Duration(r))
	}
	return t.UTC().Format(time.RFC3339)
}

func (anthropic) stopReason(c *completion) string {
	if c.truncated {
		return "max_tokens"
	}
	return "end_turn"
}

func (a anthropic) plainBody(c *completion) []byte {
	b := append(make([]byte, 0, 512+len(c.text)), `{"id":`...)
	b = appendString(b, c.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, c.model)
	b = append(b, `,"content":[{"type":"text","text":`...)
	b = appendString(b, c.text)
	b = append(b, `}],"stop_reason":`...)
	b = appendString(b, a.stopReason(c))
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = appendInputUsage(b, c)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, c.outTokens)
	return append(b, "}}"...)
}

// appendInputUsage writes the input side of a usage object, without its
// closing brace: input_tokens is the uncached part, as the API reports it.
func appendInputUsage(b []byte, c *completion) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, c.inTokens-c.cacheRead-c.cacheWrite)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = appendInt(b, c.cacheWrite)
	b = append(b, `,"cache_read_input_tokens":`...)
	return appendInt(b, c.cacheRead)
}

func event(b []byte, name string, data ...string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	for _, d := range data {
		b = append(b, d...)
	}
	return append(b, "\n\n"...)
}

func (anthropic) streamStart(b []byte, c *completion) []byte {
	head := appendString([]byte(`{"type":"message_start","message":{"id":`), c.id)
	head = append(head, `,"type":"message","role":"assistant","model":`...)
	head = appendString(head, c.model)
	head = append(head, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	head = appendInputUsage(head, c)
	head = append(head, `,"output_tokens":1}}}`...)
	b = event(b, "message_start", string(head))
	b = event(b, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	return event(b, "ping", `{"type":"ping"}`)
}

func (anthropic) streamDelta(b []byte, _ *completion, text string) []byte {
	return event(b, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`, string(appendString(nil, text)), `}}`)
}

func (a anthropic) streamFinish(b []byte, c *completion) []byte {
	b = event(b, "content_block_stop", `{"type":"content_block_stop","index":0}`)
	b = event(b, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"`, a.stopReason(c),
		`","stop_sequence":null},"usage":{"output_tokens":`, strconv.Itoa(c.outTokens), `}}`)
	return event(b, "message_stop", `{"type":"message_stop"}`)
}

func (anthropic) streamError(b []byte, c *completion) []byte {
	return event(b, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":`, string(appendNullString(nil, c.reqID)), `}`)
}
