package providers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// This file is the provider-neutral face of the providers' batch APIs
// (OpenAI Batch, Anthropic Message Batches): work that can wait up to 24 h
// runs at half price and outside the synchronous rate limits. The runner
// splits, submits, polls and collects through BatchClient; the wire formats
// live in providers/openai and providers/anthropic.

// BatchItem is one request of a batch.
type BatchItem struct {
	// CustomID is the id sent to the provider; it must satisfy ValidID.
	CustomID string
	// Body is the provider's request body, without stream flags.
	Body []byte
	// Endpoint is the API the body is for. A batch holds one endpoint
	// (OpenAI's endpoint is per batch): the runner groups items by it.
	Endpoint Endpoint
}

// BatchJob is a provider batch as last seen.
type BatchJob struct {
	ID string
	// Status is the provider's own word (OpenAI: validating, in_progress,
	// finalizing, completed, failed, expired, cancelling, cancelled;
	// Anthropic: in_progress, canceling, ended).
	Status string
	// Ended reports that the batch will not change any more: its results
	// can be collected (none for a batch that failed validation).
	Ended bool
	// Total is the number of requests. Succeeded and Failed count those
	// with a result so far; Anthropic reports them only once the batch has
	// ended, OpenAI as it goes. Expired and Canceled count the requests
	// never executed (known once ended).
	Total, Succeeded, Failed, Expired, Canceled int
	// Error explains a batch that failed as a whole (OpenAI input
	// validation); its requests have no results.
	Error string

	// Created is when the provider created the batch, by its clock.
	Created time.Time
	// Label is the label Submit stored with the batch; zero for a batch
	// llmrun did not create, and always for a client without Labels.
	Label BatchLabel

	// InputFileID, OutputFileID and ErrorFileID are OpenAI's files ("" for
	// null).
	InputFileID, OutputFileID, ErrorFileID string
	// ResultsURL is Anthropic's results_url ("" until the batch ended).
	ResultsURL string
}

// BatchLabel marks a batch as llmrun's, so that a rerun can find a batch it
// never recorded (a crash while the batch was being created, a deleted
// state file) by listing the provider's batches instead of paying for a
// second one.
type BatchLabel struct {
	// Job names the checkpoint the batch belongs to (a hash of the output
	// file's path).
	Job string
	// Tag names one intent to create a batch, unique per intent.
	Tag string
	// Input is the input file's base name, for people reading the
	// provider's console.
	Input string
	// Resume tells Submit that an earlier attempt at this work may have
	// left objects behind that it may reuse (an OpenAI input file). It is
	// not stored.
	Resume bool
}

// MaxLabelValue bounds a label value as stored (OpenAI metadata values).
const MaxLabelValue = 512

// ListPages bounds the pages List reads: the batches it needs are recent,
// and a workspace may hold thousands of old ones.
const ListPages = 10

// Batch outcomes of one request, BatchResult.Outcome.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeErrored   = "errored"  // an error answer; Status, Body and Err say which
	OutcomeExpired   = "expired"  // never executed: the 24 h window ran out
	OutcomeCanceled  = "canceled" // never executed: the batch was cancelled
)

// BatchResult is one request's result from a batch.
type BatchResult struct {
	// CustomID is the id as sent (BatchItem.CustomID).
	CustomID string
	// Outcome is one of the Outcome constants.
	Outcome string
	// Status is the HTTP status of the request's answer; 0 when it never
	// ran (and for Anthropic errors, which carry none: then the status the
	// error type implies).
	Status    int
	RequestID string
	// Body is the answer, the same non-streaming body Provider.Send returns
	// for the request, or the provider's error body. Nil when it never ran.
	Body  []byte
	Model string
	Usage Usage
	// Err describes a result that is not a success: Class from the error
	// type, Code the provider's error code or type ("batch_expired",
	// "batch_cancelled" for requests that never ran), Message.
	Err *Error
}

// OK reports whether the request succeeded.
func (r *BatchResult) OK() bool { return r.Outcome == OutcomeSucceeded }

// BatchClient drives one provider's batch API. Like Provider it never
// retries by itself; unlike Provider its calls are few and small (bar the
// upload), so the runner sends them outside the limiter. Errors are *Error
// whenever the client could classify them; a cancelled ctx is ctx.Err().
//
// A BatchClient is safe for concurrent use.
type BatchClient interface {
	// Name is the provider's short name ("openai", "anthropic").
	Name() string
	// Format is the wire format of the bodies Submit accepts.
	Format() Format
	// BaseURL identifies the endpoint; it is recorded with each batch, so
	// it never holds userinfo (see StripUserinfo): credentials come from
	// the command line or the environment on every run, never from disk.
	BaseURL() string
	// MaxItems and MaxBytes are the provider's limits for one batch:
	// requests, and bytes of the submitted file or body.
	MaxItems() int
	MaxBytes() int64
	// ItemSize is how many bytes item adds to a batch's file or body.
	ItemSize(item BatchItem) int64
	// ValidID reports whether the provider accepts id as a custom_id;
	// others must be mapped (reversibly) before Submit.
	ValidID(id string) bool
	// Labels reports whether the provider stores Submit's label with the
	// batch and returns it from Poll and List (OpenAI's metadata).
	// Anthropic's Message Batches hold no label: a batch there can only be
	// told by its size and creation time, and proved llmrun's by its
	// results, so such a client must accept the custom_id
	// "llmrun-<16 hex digits>".
	Labels() bool
	// Submit creates one batch of items (within the limits, unique ids),
	// with label where the provider keeps labels.
	Submit(ctx context.Context, items []BatchItem, label BatchLabel) (BatchJob, error)
	// List returns the batches created at or after since, newest first,
	// reading at most ListPages pages.
	List(ctx context.Context, since time.Time) ([]BatchJob, error)
	// SentIDs streams the custom_ids job was created with, if the provider
	// can tell before the batch ended (OpenAI: its input file); otherwise
	// it returns an error wrapping errors.ErrUnsupported.
	SentIDs(ctx context.Context, job BatchJob, fn func(customID string) error) error
	// Poll returns the batch's current state.
	Poll(ctx context.Context, id string) (BatchJob, error)
	// Results streams the results of an ended batch to fn, in the
	// provider's order (not the input's), stopping at fn's first error.
	Results(ctx context.Context, job BatchJob, fn func(BatchResult) error) error
	// Cancel asks the provider to stop the batch; requests already done
	// keep their results. It returns the batch as the provider left it.
	Cancel(ctx context.Context, id string) (BatchJob, error)
}

// EndpointBatcher is a BatchClient whose batch API takes only some
// endpoints; a client that does not implement it takes every endpoint.
type EndpointBatcher interface {
	// Batches reports whether the batch API takes requests for ep, and
	// if not, why.
	Batches(ep Endpoint) (bool, string)
}

// ListSince pages through a newest-first list of batches for a client's
// List: page(after) returns the page after the batch id after ("" for the
// first) and whether more follow. It stops at the end, after ListPages
// pages, or at the first batch created before since.
func ListSince(since time.Time, page func(after string) ([]BatchJob, bool, error)) ([]BatchJob, error) {
	var out []BatchJob
	after := ""
	for range ListPages {
		jobs, more, err := page(after)
		if err != nil {
			return out, err
		}
		for _, j := range jobs {
			if j.Created.Before(since) {
				return out, nil
			}
			out = append(out, j)
			after = j.ID
		}
		if !more || len(jobs) == 0 {
			break
		}
	}
	return out, nil
}

// StripUserinfo returns raw without its userinfo ("http://user:pass@host"
// becomes "http://host"): what may be written to a state file or a log.
// A raw URL that does not parse as scheme://host/path loses everything up
// to the last '@' before its path instead.
//
// Query values are masked too (see maskQuery): the result is what any URL
// llmrun was given may be shown as.
func StripUserinfo(raw string) string { return maskQuery(stripUserinfo(raw)) }

func stripUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.Opaque == "" {
		if u.User == nil {
			return raw // as given: keys and fingerprints made from it stay stable
		}
		u.User = nil
		return u.String()
	}
	// Unparsable: drop everything up to the last '@' of the authority.
	rest, scheme := raw, ""
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	auth, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		auth = auth[i+1:]
	}
	return scheme + auth + path
}

// Call is one call of a batch API as a dialect's batch client makes it.
type Call struct {
	Method, URL string
	Header      http.Header
	Body        []byte // nil sends none
	// MaxAnswer bounds the answer read, in bytes.
	MaxAnswer int64
	// RequestIDHeader names the header of the provider's request id.
	RequestIDHeader string
	// StatusError makes a non-2xx answer an error: each dialect reads its
	// own error bodies.
	StatusError func(*http.Response) error
	// Decode reads the answer; an error makes it "unparsable answer: …".
	// nil only checks that the answer is JSON ("unparsable answer").
	Decode func(raw []byte) error
}

// CallJSON sends one batch API call and returns its 2xx answer. Sending
// fails as Do does; reading fails as a transport error; an unparsable
// answer is a ClassServer *Error with the key redacted from its body.
func (c *Config) CallJSON(ctx context.Context, call Call) ([]byte, error) {
	var rd io.Reader
	if call.Body != nil {
		rd = bytes.NewReader(call.Body)
	}
	resp, err := c.Do(ctx, call.Method, call.URL, call.Header, rd)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, call.StatusError(resp)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, call.MaxAnswer))
	if err != nil {
		return nil, TransportError(ctx, err, c.Secret())
	}
	msg := ""
	if call.Decode == nil {
		if !gjson.ValidBytes(raw) {
			msg = "unparsable answer"
		}
	} else if err := call.Decode(raw); err != nil {
		msg = "unparsable answer: " + err.Error()
	}
	if msg != "" {
		return nil, &Error{Class: ClassServer, Status: resp.StatusCode, RequestID: resp.Header.Get(call.RequestIDHeader),
			Message: msg, Body: Redact(raw, c.Secret())}
	}
	return raw, nil
}

// Get sends a GET to url with header (cloned) and returns the response as
// soon as its headers arrived; the caller closes its body. Failures map as
// for Post: ctx.Err() unwrapped, a 3xx a ClassRedirect *Error (redirects
// are never followed), otherwise a ClassNetwork or ClassTimeout *Error with
// the API key redacted. FirstByteTimeout bounds the wait for
// the headers; reads of the body are not bounded (result files are long).
func (c *Config) Get(ctx context.Context, url string, header http.Header) (*http.Response, error) {
	return c.Do(ctx, http.MethodGet, url, header, nil)
}

// Do sends one request like Get, with any method and an optional body
// (Content-Type is the caller's). The batch clients use it for uploads,
// which may take longer than FirstByteTimeout: no timer runs for a request
// with a body.
func (c *Config) Do(ctx context.Context, method, url string, header http.Header, body io.Reader) (*http.Response, error) {
	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(rctx, method, url, body)
	if err != nil {
		cancel()
		return nil, &Error{Class: ClassInvalid, Message: RedactString(err.Error(), c.Secret()), Err: err}
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	fired := false
	var timer *time.Timer
	if c.FirstByteTimeout > 0 && body == nil {
		timer = time.AfterFunc(c.FirstByteTimeout, cancel)
	}
	resp, err := c.roundTrip(req)
	if timer != nil {
		fired = !timer.Stop()
	}
	if err == nil && fired {
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		if fired {
			err = &timeoutError{"no response headers", c.FirstByteTimeout}
		}
		return nil, mapTransport(ctx, err, c.Secret())
	}
	if isRedirect(resp.StatusCode) {
		resp.Body.Close()
		cancel()
		return nil, c.redirectError(req, resp)
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody releases the request's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// TransportError maps a failure while reading a response body as Post and
// Get map failed round trips: ctx.Err() unwrapped, else a ClassNetwork or
// ClassTimeout *Error with key redacted.
func TransportError(ctx context.Context, err error, key string) error {
	return mapTransport(ctx, err, key)
}

// MaxResultLine bounds one line of a batch result file: an answer is at
// most a few MB, so a longer line means a broken download.
const MaxResultLine = 64 << 20

// ResultLine starts the reading of one line of a batch's result file: the
// line parsed, and a result naming its custom_id. A line that is not JSON
// is a ClassServer error (what names it is the dialect's word for the
// file).
func ResultLine(line []byte, what string) (gjson.Result, BatchResult, error) {
	if !gjson.ValidBytes(line) {
		return gjson.Result{}, BatchResult{}, &Error{Class: ClassServer, Message: what + " line is not JSON"}
	}
	l := gjson.ParseBytes(line)
	return l, BatchResult{CustomID: l.Get("custom_id").Str}, nil
}

// EachResult is the line reader that hands fn every result of a result
// file, each line read by parse, the dialect's reader of one.
func EachResult(parse func(line []byte) (BatchResult, error), fn func(BatchResult) error) func(line []byte) error {
	return func(line []byte) error {
		r, err := parse(line)
		if err != nil {
			return err
		}
		return fn(r)
	}
}

// GetLines GETs rawURL and calls fn with every non-empty line of a 2xx
// answer's body, as EachLine does; any other status is statusError's
// reading of it. The batch clients read their result files with it.
func (c *Config) GetLines(ctx context.Context, rawURL string, header http.Header, statusError func(*http.Response) error, fn func(line []byte) error) error {
	resp, err := c.Get(ctx, rawURL, header)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(resp)
	}
	return EachLine(ctx, resp.Body, c.Secret(), fn)
}

// EachLine calls fn with every non-empty line of r (valid until fn
// returns), stopping at fn's first error. Read failures are mapped with
// TransportError.
func EachLine(ctx context.Context, r io.Reader, key string, fn func(line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxResultLine)
	for sc.Scan() {
		if line := sc.Bytes(); len(line) > 0 {
			if err := fn(line); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			// ClassTooLarge: downloading it again would end the same way.
			return &Error{Class: ClassTooLarge, Message: "a result line is longer than 64 MiB (MaxResultLine)", Err: err}
		}
		return TransportError(ctx, err, key)
	}
	return nil
}
