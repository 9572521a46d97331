package openai

import (
	"context"
	"io"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
)

// The Responses API (wire-formats §7): POST /responses. A stream carries
// typed events (response.created … response.output_text.delta …
// response.completed); its terminal event holds the whole response object,
// usage included, which is exactly the body a non-streaming call returns.
// So nothing is reassembled from deltas: they only mark the time to the
// first token, and the terminal object is kept as it arrived.

// prepareResponses sets or removes the stream flag. The Responses API has
// no include_usage: the terminal event always carries usage. The caller's
// body is never modified.
func (p *Provider) prepareResponses(in []byte) ([]byte, error) {
	if p.cfg.Stream {
		out, err := sjson.SetBytes(in, "stream", true)
		if err == nil && gjson.GetBytes(out, "stream_options.include_usage").Exists() {
			out, err = sjson.DeleteBytes(out, "stream_options.include_usage") // Chat's, rejected here
		}
		return out, err
	}
	return dropStream(in)
}

// parseResponses reads a non-streaming Responses answer. A 200 whose
// response failed (status "failed", or an error object in place of a
// response) is a failed attempt, retried like a broken stream.
func (p *Provider) parseResponses(b []byte, out *providers.Response) error {
	root := gjson.ParseBytes(b)
	if (root.Get("error").IsObject() && !root.Get("output").Exists()) || root.Get("status").Str == "failed" {
		e := providers.AnswerError(root, b, out, p.cfg.Secret(), fillError)
		responseFailure(e)
		e.Message = providers.RedactString(e.Message, p.cfg.Secret())
		return e
	}
	p.fillResponse(b, out)
	return nil
}

// fillResponse fills out from a complete Response object b (kept as the
// body).
func (p *Provider) fillResponse(b []byte, out *providers.Response) {
	root := gjson.ParseBytes(b)
	out.Body = b
	out.Model = root.Get("model").String()
	out.Text = outputText(root)
	out.Usage = usage(root.Get("usage"))
}

// outputText joins the output_text parts of every message item, as the
// SDKs' output_text does (reasoning items come first and hold none).
func outputText(root gjson.Result) string {
	var text []byte
	root.Get("output").ForEach(func(_, item gjson.Result) bool {
		if item.Get("type").Str != "message" {
			return true
		}
		item.Get("content").ForEach(func(_, part gjson.Result) bool {
			if part.Get("type").Str == "output_text" {
				text = append(text, part.Get("text").Str...)
			}
			return true
		})
		return true
	})
	return string(text)
}

// responseFailure gives a failed response's error its class: a spent quota
// stops the run as it does on chat; anything else is retried.
func responseFailure(e *providers.Error) {
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" {
		e.Class = providers.ClassQuota
	}
	if e.Message == "" {
		e.Message = "the response failed"
	}
}

// Terminal event types of a Responses stream.
const (
	evCompleted  = `"response.completed"`
	evIncomplete = `"response.incomplete"`
	evFailed     = `"response.failed"`
	evError      = `"error"`
)

// rstream follows one Responses stream. The members of the current event
// are raw slices of the decoder's buffer, valid for that event only; the
// terminal response is copied out once.
type rstream struct {
	typ, delta, response, errObj, code, message string
	content                                     bool   // a delta carried output: the moment TTFT measures
	final                                       []byte // the terminal response, once it came
}

func (s *rstream) member(k, v string) bool {
	switch k {
	case `"type"`:
		s.typ = v
	case `"delta"`:
		s.delta = v
	case `"response"`:
		s.response = v
	case `"error"`:
		s.errObj = v
	case `"code"`:
		s.code = v
	case `"message"`:
		s.message = v
	}
	return true
}

// event applies one event. It returns the terminal response (a copy) when
// the stream has ended well, or the error that ended it.
func (s *rstream) event(data []byte) (final []byte, err *providers.Error) {
	v := view(data)
	if !jsonvalid.Valid(data) {
		return nil, providers.MidStream("stream event is not valid JSON", data)
	}
	s.typ, s.delta, s.response, s.errObj, s.code, s.message = "", "", "", "", "", ""
	providers.EachMember(v, s.member)
	switch s.typ {
	case evCompleted, evIncomplete:
		if len(s.response) == 0 || s.response[0] != '{' {
			return nil, providers.MidStream("terminal event without a response object", data)
		}
		return append([]byte(nil), s.response...), nil
	case evFailed:
		e := &providers.Error{Class: providers.ClassMidStream, Body: append([]byte(nil), data...)}
		fillError(e, gjson.Parse(s.response))
		responseFailure(e)
		return nil, e
	case evError, "":
		if s.typ == "" && (s.errObj == "" || s.errObj == "null") {
			return nil, nil // not an event of this API: ignored, as the SDKs do
		}
		// Captured traffic nests the error ({"type":"error","error":{…}});
		// the spec has it flat ({"type":"error","code","message"}).
		e := &providers.Error{Class: providers.ClassMidStream, Body: append([]byte(nil), data...)}
		if s.errObj != "" && s.errObj != "null" {
			fillError(e, gjson.Parse(s.errObj))
		} else {
			e.Code, e.Message = gjson.Parse(s.code).String(), gjson.Parse(s.message).String()
		}
		responseFailure(e)
		if e.Message == "the response failed" {
			e.Message = "error event in stream"
		}
		return nil, e
	}
	if !s.content && len(s.delta) > 2 && len(s.typ) > 8 && s.typ[len(s.typ)-7:] == `.delta"` {
		s.content = true
	}
	return nil, nil
}

// readResponsesStream decodes a Responses SSE answer into out. The stream
// has no [DONE]: it ends at its terminal event (response.completed or
// response.incomplete; response.failed and error events fail the
// attempt), and EOF before one is a failure, because the answer may be cut
// anywhere.
func (p *Provider) readResponsesStream(ctx context.Context, r io.Reader, out *providers.Response, start time.Time) error {
	var s rstream
	if err := p.cfg.ReadStream(ctx, r, out, start, &s, "response.completed"); err != nil {
		return err
	}
	p.fillResponse(s.final, out)
	return nil
}

// Event reads one event; a terminal one ends the stream, kept in final.
func (s *rstream) Event(_, data []byte) (bool, *providers.Error) {
	if len(data) == 0 {
		return false, nil
	}
	final, err := s.event(data)
	if err != nil {
		return false, err
	}
	s.final = final
	return final != nil, nil
}

// Content reports whether a delta carried output yet.
func (s *rstream) Content() bool { return s.content }
