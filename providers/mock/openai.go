package mock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// openAI is the Chat Completions dialect.
type openAI struct{}

func (openAI) tag() byte               { return 'o' }
func (openAI) requestIDHeader() string { return "x-request-id" }

func (openAI) parse(body []byte) (*request, *apiError) {
	var in struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		MaxCompletionTokens *int `json:"max_completion_tokens"`
		MaxTokens           *int `json:"max_tokens"`
		Stream              bool `json:"stream"`
		StreamOptions       *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errInvalid("", "We could not parse the JSON body of your request: "+err.Error())
	}
	if len(in.Messages) == 0 {
		return nil, errInvalid("messages", "[] is too short - 'messages'")
	}
	req := &request{model: in.Model, stream: in.Stream}
	var prompt []byte // the messages as the prompt cache sees them
	for i, m := range in.Messages {
		var e *apiError
		if prompt, e = req.message(prompt, "messages."+strconv.Itoa(i), m.Role, m.Content); e != nil {
			return nil, e
		}
	}
	req.prefixes = openAIPrefixes(in.Model, prompt)
	switch {
	case in.MaxCompletionTokens != nil:
		req.maxTokens = *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		req.maxTokens = *in.MaxTokens
	}
	if req.maxTokens < 0 || (req.maxTokens == 0 && (in.MaxCompletionTokens != nil || in.MaxTokens != nil)) {
		return nil, errInvalid("max_tokens", "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1.")
	}
	if in.StreamOptions != nil {
		if !in.Stream {
			return nil, errInvalid("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		req.includeUsage = in.StreamOptions.IncludeUsage
	}
	return req, nil
}

// message reads one message of an OpenAI conversation at path (Chat
// Completions' messages, a Responses input item) onto prompt, as turn
// does; a user message's text is the prompt the answer echoes.
func (req *request) message(prompt []byte, path, role string, content json.RawMessage) ([]byte, *apiError) {
	text, err := contentText(content)
	if err != nil {
		return nil, errInvalid(path+".content", "Invalid content: "+err.Error())
	}
	if role == "user" {
		req.prompt = text
	}
	return req.turn(prompt, role, text), nil
}

func (openAI) errorStatus(e *apiError) int { return e.status }

func (openAI) errorBody(e *apiError, _ string) []byte {
	b := append(make([]byte, 0, 256), `{"error":{"message":`...)
	b = appendString(b, e.message)
	b = append(b, `,"type":`...)
	b = appendString(b, e.oaType)
	b = append(b, `,"param":`...)
	b = appendNullString(b, e.oaParam)
	b = append(b, `,"code":`...)
	b = appendNullString(b, e.oaCode)
	return append(b, "}}"...)
}

// setLimitHeaders writes x-ratelimit-* for requests and (input) tokens;
// resets are Go durations.
func (openAI) setLimitHeaders(h http.Header, l limitState, _ time.Time) {
	set := func(name string, w window) {
		if !w.set {
			return
		}
		h.Set("x-ratelimit-limit-"+name, formatLimit(w.limit))
		h.Set("x-ratelimit-remaining-"+name, strconv.FormatInt(w.remaining, 10))
		h.Set("x-ratelimit-reset-"+name, goDuration(w.reset))
	}
	set("requests", l.requests)
	set("tokens", l.input)
}

// goDuration formats d like OpenAI's reset headers ("20ms", "1.5s",
// "6m0s"): rounded up to the millisecond.
func goDuration(d time.Duration) string {
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d.String()
}

func (openAI) finishReason(c *completion) string {
	if c.truncated {
		return "length"
	}
	return "stop"
}

func (o openAI) plainBody(c *completion) []byte {
	b := append(make([]byte, 0, 512+len(c.text)), `{"id":`...)
	b = appendString(b, c.id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, c.model)
	b = append(b, `,"system_fingerprint":"fp_mock","choices":[{"index":0,"message":{"role":"assistant","content":`...)
	b = appendString(b, c.text)
	b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":`...)
	b = appendString(b, o.finishReason(c))
	b = append(b, `}],"usage":`...)
	b = o.appendUsage(b, c)
	return append(b, '}')
}

func (openAI) appendUsage(b []byte, c *completion) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, c.inTokens)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, c.outTokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, c.inTokens+c.outTokens)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, c.cacheRead)
	return append(b, `,"audio_tokens":0}}`...)
}

// openAIPrefixes are the cacheable prefixes of a prompt (its messages'
// roles and texts, NUL-separated): from 1,024 tokens on, every 128 tokens
// (of the CountTokens rule, four bytes each), as OpenAI caches. Each is at
// most the prompt's token count, so cached tokens never exceed it.
func openAIPrefixes(model string, prompt []byte) []prefix { return stepPrefixes('o', model, prompt) }

// stepPrefixes are the prefixes of prompt cached in OpenAI's steps (see
// openAIPrefixes), hashed under the dialect's tag so that dialects never
// share a cache entry.
func stepPrefixes(tag byte, model string, prompt []byte) []prefix {
	const first, step = openAIMinCached * 4, openAICacheStep * 4
	if len(prompt) < first {
		return nil
	}
	ph := newPrefixHash(tag, model)
	out := make([]prefix, 0, (len(prompt)-first)/step+1)
	done := 0
	for end := first; end <= len(prompt); end += step {
		ph.h.Write(prompt[done:end])
		done = end
		out = append(out, ph.sum(end/4))
	}
	return out
}

// chunk appends one data: event carrying a chat.completion.chunk whose
// choices array is choices (raw JSON).
func (openAI) chunk(b []byte, c *completion, choices string, usage []byte) []byte {
	b = append(b, `data: {"id":`...)
	b = appendString(b, c.id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, c.model)
	b = append(b, `,"system_fingerprint":"fp_mock","choices":[`...)
	b = append(b, choices...)
	b = append(b, ']')
	if c.includeUsage {
		b = append(b, `,"usage":`...)
		if usage == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, usage...)
		}
	}
	return append(b, "}\n\n"...)
}

func (o openAI) streamStart(b []byte, c *completion) []byte {
	return o.chunk(b, c, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`, nil)
}

func (o openAI) streamDelta(b []byte, c *completion, text string) []byte {
	choice := appendString([]byte(`{"index":0,"delta":{"content":`), text)
	choice = append(choice, `},"logprobs":null,"finish_reason":null}`...)
	return o.chunk(b, c, string(choice), nil)
}

func (o openAI) streamFinish(b []byte, c *completion) []byte {
	b = o.chunk(b, c, `{"index":0,"delta":{},"logprobs":null,"finish_reason":"`+o.finishReason(c)+`"}`, nil)
	if c.includeUsage {
		b = o.chunk(b, c, "", o.appendUsage(nil, c))
	}
	return append(b, "data: [DONE]\n\n"...)
}

func (openAI) streamError(b []byte, _ *completion) []byte {
	return append(b, `data: {"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`+"\n\n"...)
}
