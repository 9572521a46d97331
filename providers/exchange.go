package providers

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/llmrun/llmrun/internal/jsonvalid"
)

// ErrInvalidJSON is the error of a request body that is not JSON.
var ErrInvalidJSON = errors.New("not valid JSON")

// Wire is what one provider's wire format plugs into Exchange: where to
// send, how to read the answer and how to classify a refusal.
type Wire struct {
	URL    string
	Header http.Header
	// RequestIDHeader names the response header with the request id.
	RequestIDHeader string
	// StatusError classifies a non-2xx answer.
	StatusError func(*http.Response) error
	// Prepare shapes a request body, valid JSON, for this wire (stream
	// flags). It must not modify its input: retries resend it.
	Prepare func(body []byte) ([]byte, error)
	// ReadStream decodes an SSE body into out; start is when the request
	// was sent (for the time to first token).
	ReadStream func(ctx context.Context, r io.Reader, out *Response, start time.Time) error
	// ParsePlain decodes a plain answer, read whole and valid JSON, into
	// out; b is out.Body's to keep.
	ParsePlain func(b []byte, out *Response) error
	// BoundTokens is the token count that bounds the size of req's answer
	// (see Config.ResponseLimit); nil is req.MaxTokens. Embeddings answer
	// with vectors, not tokens, and say so here.
	BoundTokens func(req *Request) int
}

// Send is Provider.Send for a provider made of w: it shapes req's body
// (a body that is not JSON, or that Prepare rejects, is ClassInvalid and
// never sent) and makes one Exchange.
func (c *Config) Send(ctx context.Context, w *Wire, req *Request) (*Response, error) {
	err := ErrInvalidJSON
	var body []byte
	if jsonvalid.Valid(req.Body) {
		body, err = w.Prepare(req.Body)
	}
	if err != nil {
		return nil, &Error{Class: ClassInvalid, Message: "request body: " + err.Error(), Err: err}
	}
	n := req.MaxTokens
	if w.BoundTokens != nil {
		n = w.BoundTokens(req)
	}
	resp, err := c.Exchange(ctx, w, body, n)
	if pe := (*Error)(nil); errors.As(err, &pe) {
		c.hint(pe, w.URL, req)
	}
	return resp, err
}

// Exchange makes one attempt: it posts body (already shaped, stream flags
// set), classifies a non-2xx answer, and decodes a 2xx one as a stream when
// the config streams, unless the server answered plain JSON (some
// OpenAI-compatible servers do). The answer may hold at most
// ResponseLimit(maxTokens, ...) bytes (ClassTooLarge otherwise). The
// response body is always closed, so the provider stops generating when we
// stop reading.
func (c *Config) Exchange(ctx context.Context, w *Wire, body []byte, maxTokens int) (*Response, error) {
	now := c.Clock()
	start := now()
	resp, err := c.Post(ctx, w.URL, w.Header, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	at := now()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := w.StatusError(resp)
		if ctxErr := ctx.Err(); ctxErr != nil {
			// The caller's cancellation or deadline cut the error body:
			// the same ctx.Err() as at every other point of the exchange.
			return nil, ctxErr
		}
		return nil, err
	}
	stream := c.Stream && !isJSON(resp.Header)
	lim := c.bound(maxTokens, stream)
	if resp.ContentLength > lim.max {
		e := lim.tooLarge(resp.ContentLength)
		e.Status, e.RequestID = resp.StatusCode, resp.Header.Get(w.RequestIDHeader)
		return nil, e
	}
	limitBody(resp.Body, lim)
	out := &Response{
		Status:    resp.StatusCode,
		RequestID: resp.Header.Get(w.RequestIDHeader),
		Limits:    c.RateLimits(resp.Header, at),
		TTFT:      at.Sub(start),
	}
	if stream {
		idleByEvents(resp.Body)
		if err := w.ReadStream(ctx, resp.Body, out, start); err != nil {
			return nil, err
		}
		Drain(resp.Body)
		return out, nil
	}
	b, err := readAll(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, StreamError(ctx, err, out.Status, out.RequestID)
	}
	if !jsonvalid.Valid(b) {
		return nil, &Error{Class: ClassMidStream, Status: out.Status, RequestID: out.RequestID,
			Message: "response body is not valid JSON", Body: Redact(b[:min(len(b), MaxErrorBody)], c.Secret())}
	}
	if err := w.ParsePlain(b, out); err != nil {
		return nil, err // nothing of a failed answer is kept
	}
	out.BodyValid = sameBytes(out.Body, b)
	return out, nil
}

// sameBytes reports whether a and b are one slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

func isJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/json"
}

// readAll is io.ReadAll with the buffer sized once from the body's
// Content-Length (up to 1 MiB; the body's own bound still applies), not
// grown from 512 bytes: a plain answer is read in one allocation.
func readAll(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 || length > 1<<20 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, length+1) // +1: EOF is seen without a grow
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than it said: grow as usual
		}
	}
}
