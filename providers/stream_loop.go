package providers

import (
	"context"
	"io"
	"time"

	"github.com/llmrun/llmrun/providers/sse"
)

// StreamHandler is one dialect's reading of a stream's events; ReadStream
// runs the loop they all share.
type StreamHandler interface {
	// Event reads one event. done reports the dialect's terminator; a
	// non-nil error is a failure the stream itself reported.
	Event(name, data []byte) (done bool, err *Error)
	// Content reports whether output has arrived: the moment TTFT measures.
	Content() bool
}

// EOFCompleter is a StreamHandler whose stream has no terminator event:
// it ends at a clean EOF, complete when Complete says so.
type EOFCompleter interface{ Complete() bool }

// ReadStream reads r's SSE events into h until h's terminator, noting the
// time to the first content in out.TTFT. It returns nil once h is done (the
// caller then fills out from h); a failure an event reported, completed by
// InStream; or, when the stream stops first, StreamEnded's error naming end.
func (c *Config) ReadStream(ctx context.Context, r io.Reader, out *Response, start time.Time, h StreamHandler, end string) error {
	now := c.Clock()
	dec := sse.NewDecoder(r)
	defer dec.Release()
	ttft := false
	for dec.Next() {
		ev := dec.Event()
		done, err := h.Event(ev.Name, ev.Data)
		if err != nil {
			return err.InStream(out, c.Secret())
		}
		if done {
			return nil
		}
		if !ttft && h.Content() {
			ttft = true
			out.TTFT = now().Sub(start)
		}
	}
	decErr := dec.Err()
	if ec, ok := h.(EOFCompleter); ok && decErr == nil && ctx.Err() == nil && ec.Complete() {
		return nil
	}
	return StreamEnded(ctx, decErr, out, end)
}
