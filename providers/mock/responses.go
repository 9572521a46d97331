package mock

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
)

// responses is the OpenAI Responses API dialect (wire-formats §7), POST
// /v1/responses: input as a string or items, instructions, max_output_tokens
// (at least 16). A stream sends every event of §7.3 with both event: and
// data:, sequence_number from 0 and no [DONE]; its terminal event
// (response.completed, or response.incomplete when max_output_tokens cut
// the text) holds the whole response, which is the plain answer exactly.
// The mid-stream fault ends a stream with one of the three failures
// captured traffic shows, chosen by the answer: a nested error event, the
// spec's flat error event, or response.failed. Errors before the stream are
// OpenAI's.
type responses struct{ openAI }

// minOutputTokens is the smallest max_output_tokens the API accepts.
const minOutputTokens = 16

func (responses) parse(body []byte) (*request, *apiError) {
	var in struct {
		Model           string          `json:"model"`
		Input           json.RawMessage `json:"input"`
		Instructions    *string         `json:"instructions"`
		MaxOutputTokens *int            `json:"max_output_tokens"`
		Stream          bool            `json:"stream"`
		StreamOptions   json.RawMessage `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errInvalid("", "We could not parse the JSON body of your request: "+err.Error())
	}
	req := &request{model: in.Model, stream: in.Stream, includeUsage: true}
	var prompt []byte
	if in.Instructions != nil {
		prompt = req.turn(prompt, "developer", *in.Instructions)
	}
	switch {
	case len(in.Input) == 0 || string(in.Input) == "null" || string(in.Input) == `""` || string(in.Input) == "[]":
		return nil, errInvalid("input", "Missing required parameter: 'input'.")
	case in.Input[0] == '"':
		if err := json.Unmarshal(in.Input, &req.prompt); err != nil {
			return nil, errInvalid("input", "Invalid 'input': "+err.Error())
		}
		prompt = req.turn(prompt, "user", req.prompt)
	default:
		var items []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(in.Input, &items); err != nil {
			return nil, errInvalid("input", "Invalid 'input': expected a string or an array of input items.")
		}
		for i, it := range items {
			if it.Type != "" && it.Type != "message" {
				continue // tool calls and outputs: no text the mock reads
			}
			var e *apiError
			if prompt, e = req.message(prompt, "input."+strconv.Itoa(i), it.Role, outputTextAsText(it.Content)); e != nil {
				return nil, e
			}
		}
	}
	req.prefixes = openAIPrefixes(in.Model, prompt)
	if in.MaxOutputTokens != nil {
		if *in.MaxOutputTokens < minOutputTokens {
			return nil, errInvalid("max_output_tokens", "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got "+strconv.Itoa(*in.MaxOutputTokens)+" instead.")
		}
		req.maxTokens = *in.MaxOutputTokens
	}
	if len(in.StreamOptions) > 0 && string(in.StreamOptions) != "null" && !in.Stream {
		return nil, errInvalid("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	return req, nil
}

// outputTextAsText lets an assistant item's output_text parts read as text.
func outputTextAsText(raw json.RawMessage) json.RawMessage {
	if len(raw) > 0 && raw[0] == '[' {
		return json.RawMessage(strings.ReplaceAll(string(raw), `"type":"output_text"`, `"type":"text"`))
	}
	return raw
}

// ids: the response's and its message's, from the completion's.
func respID(c *completion) string { return "resp_" + strings.TrimPrefix(c.id, "chatcmpl-") }
func msgID(c *completion) string  { return "msg_" + strings.TrimPrefix(c.id, "chatcmpl-") }

// finalStatus is the response's and the message item's final status.
func finalStatus(c *completion) string {
	if c.truncated {
		return "incomplete"
	}
	return "completed"
}

// appendItem appends the message item holding text, in status.
func appendItem(b []byte, c *completion, status, text string, done bool) []byte {
	b = append(b, `{"type":"message","id":`...)
	b = appendString(b, msgID(c))
	b = append(b, `,"status":`...)
	b = appendString(b, status)
	b = append(b, `,"role":"assistant","content":[`...)
	if done {
		b = appendPart(b, text)
	}
	return append(b, "]}"...)
}

func appendPart(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = appendString(b, text)
	return append(b, `,"annotations":[],"logprobs":[]}`...)
}

// appendResponse appends the response object: in progress (no output, no
// usage) or final.
func (r responses) appendResponse(b []byte, c *completion, final bool) []byte {
	status := "in_progress"
	if final {
		status = finalStatus(c)
	}
	b = append(b, `{"id":`...)
	b = appendString(b, respID(c))
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, status)
	b = append(b, `,"error":null,"incomplete_details":`...)
	if final && c.truncated {
		b = append(b, `{"reason":"max_output_tokens"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = appendString(b, c.model)
	b = append(b, `,"output":[`...)
	if final {
		b = appendItem(b, c, status, c.text, true)
	}
	b = append(b, `],"usage":`...)
	if !final {
		return append(b, "null}"...)
	}
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, c.inTokens)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, c.cacheRead)
	b = append(b, `,"cache_write_tokens":0},"output_tokens":`...)
	b = appendInt(b, c.outTokens)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	b = appendInt(b, c.inTokens+c.outTokens)
	return append(b, "}}"...)
}

func (r responses) plainBody(c *completion) []byte {
	return r.appendResponse(make([]byte, 0, 512+len(c.text)), c, true)
}

// event appends one event of type typ whose data is {"type":typ,
// "sequence_number":n<rest>}; rest starts with a comma or is empty.
func (responses) event(b []byte, c *completion, typ string, rest func([]byte) []byte) []byte {
	b = append(b, "event: "+typ+"\ndata: {\"type\":\""+typ+"\",\"sequence_number\":"...)
	b = appendInt(b, c.seq)
	c.seq++
	b = rest(b)
	return append(b, "}\n\n"...)
}

// indices are the members locating the one text part.
func indices(b []byte, c *completion) []byte {
	b = append(b, `,"item_id":`...)
	b = appendString(b, msgID(c))
	return append(b, `,"output_index":0,"content_index":0`...)
}

func (r responses) streamStart(b []byte, c *completion) []byte {
	c.seq = 0
	for _, typ := range []string{"response.created", "response.in_progress"} {
		b = r.event(b, c, typ, func(b []byte) []byte {
			return r.appendResponse(append(b, `,"response":`...), c, false)
		})
	}
	b = r.event(b, c, "response.output_item.added", func(b []byte) []byte {
		return appendItem(append(b, `,"output_index":0,"item":`...), c, "in_progress", "", false)
	})
	return r.event(b, c, "response.content_part.added", func(b []byte) []byte {
		return appendPart(append(indices(b, c), `,"part":`...), "")
	})
}

func (r responses) streamDelta(b []byte, c *completion, text string) []byte {
	return r.event(b, c, "response.output_text.delta", func(b []byte) []byte {
		b = appendString(append(indices(b, c), `,"delta":`...), text)
		return append(b, `,"logprobs":[]`...)
	})
}

func (r responses) streamFinish(b []byte, c *completion) []byte {
	b = r.event(b, c, "response.output_text.done", func(b []byte) []byte {
		b = appendString(append(indices(b, c), `,"text":`...), c.text)
		return append(b, `,"logprobs":[]`...)
	})
	b = r.event(b, c, "response.content_part.done", func(b []byte) []byte {
		return appendPart(append(indices(b, c), `,"part":`...), c.text)
	})
	b = r.event(b, c, "response.output_item.done", func(b []byte) []byte {
		return appendItem(append(b, `,"output_index":0,"item":`...), c, finalStatus(c), c.text, true)
	})
	return r.event(b, c, "response."+finalStatus(c), func(b []byte) []byte {
		return r.appendResponse(append(b, `,"response":`...), c, true)
	})
}

// Mid-stream failures, as captured and as specified.
const (
	respErrNested = `,"error":{"type":"server_error","code":"server_error","message":"The server had an error while processing your request. Sorry about that!","param":null}`
	respErrFlat   = `,"code":"server_error","message":"The server had an error while processing your request. Sorry about that!","param":null`
)

func (r responses) streamError(b []byte, c *completion) []byte {
	switch binary.LittleEndian.Uint16([]byte(c.id[len(c.id)-2:])) % 3 {
	case 0:
		return r.event(b, c, "error", func(b []byte) []byte { return append(b, respErrNested...) })
	case 1:
		return r.event(b, c, "error", func(b []byte) []byte { return append(b, respErrFlat...) })
	}
	return r.event(b, c, "response.failed", func(b []byte) []byte {
		b = append(b, `,"response":{"id":`...)
		b = appendString(b, respID(c))
		b = append(b, `,"object":"response","created_at":`...)
		b = strconv.AppendInt(b, c.created, 10)
		b = append(b, `,"status":"failed","error":{"code":"server_error","message":"The server had an error while processing your request. Sorry about that!"},"incomplete_details":null,"model":`...)
		b = appendString(b, c.model)
		return append(b, `,"output":[],"usage":null}`...)
	})
}
