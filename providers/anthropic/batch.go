package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// The Anthropic Message Batches API (wire-formats §4): the requests go
// inline in one POST /v1/messages/batches, the batch is polled (GET
// /v1/messages/batches/{id}) and, once processing_status is "ended", its
// results are streamed from results_url as JSONL.

// Batch limits. The documented 256 MB is taken in decimal units, less room
// for the {"requests":[...]} envelope.
const (
	batchMaxItems = 100_000
	batchMaxBytes = 256_000_000 - 64
)

// batchIDPattern is the custom_id Anthropic accepts.
// Compiled on first use: its {1,64} makes it the costliest of the
// package's start-up, and only the batch route checks ids.
var batchIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// batchAPIVersion is the anthropic-version header sent.
const batchAPIVersion = "2023-06-01"

// Batch is an Anthropic Message Batches client. It is safe for concurrent
// use.
type Batch struct {
	cfg providers.Config
}

var _ providers.BatchClient = (*Batch)(nil)

// NewBatch returns a Message Batches client for cfg (BaseURL: the host
// root, as for the Messages client; Stream is ignored).
func NewBatch(cfg providers.Config) *Batch {
	cfg.SplitQuery()
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &Batch{cfg: cfg}
}

// Name implements providers.BatchClient.
func (b *Batch) Name() string { return "anthropic" }

// Format implements providers.BatchClient.
func (b *Batch) Format() providers.Format { return providers.FormatAnthropic }

// BaseURL implements providers.BatchClient: the base URL without userinfo.
func (b *Batch) BaseURL() string { return providers.StripUserinfo(b.cfg.BaseURL) }

// MaxItems implements providers.BatchClient: 100,000 requests per batch.
func (b *Batch) MaxItems() int { return batchMaxItems }

// MaxBytes implements providers.BatchClient: 256 MB per batch.
func (b *Batch) MaxBytes() int64 { return batchMaxBytes }

// ItemSize implements providers.BatchClient: the item's bytes in the
// request body, its separating comma included.
func (b *Batch) ItemSize(it providers.BatchItem) int64 {
	return int64(len(batchAppendItem(nil, it)) + 1)
}

// ValidID implements providers.BatchClient: ^[a-zA-Z0-9_-]{1,64}$.
func (b *Batch) ValidID(id string) bool { return batchIDPattern().MatchString(id) }

func batchAppendItem(dst []byte, it providers.BatchItem) []byte {
	id, _ := json.Marshal(it.CustomID)
	dst = append(dst, `{"custom_id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"params":`...)
	dst = append(dst, it.Body...)
	return append(dst, '}')
}

func (b *Batch) header() http.Header {
	h := make(http.Header, 3)
	if b.cfg.APIKey != "" {
		h.Set("x-api-key", b.cfg.APIKey)
	}
	h.Set("anthropic-version", batchAPIVersion)
	return h
}

// Labels implements providers.BatchClient: a MessageBatch has no field for
// a label (no metadata, and neither List nor Poll shows the custom_ids).
func (b *Batch) Labels() bool { return false }

// Submit implements providers.BatchClient; the label is not kept (Labels).
func (b *Batch) Submit(ctx context.Context, items []providers.BatchItem, _ providers.BatchLabel) (providers.BatchJob, error) {
	body := append(make([]byte, 0, 64<<10), `{"requests":[`...)
	for i, it := range items {
		if i > 0 {
			body = append(body, ',')
		}
		body = batchAppendItem(body, it)
	}
	body = append(body, "]}"...)
	h := b.header()
	h.Set("Content-Type", "application/json")
	return b.job(ctx, http.MethodPost, "/v1/messages/batches", h, body)
}

// List implements providers.BatchClient: GET /v1/messages/batches, newest
// first, 1000 a page.
func (b *Batch) List(ctx context.Context, since time.Time) ([]providers.BatchJob, error) {
	return providers.ListSince(since, func(after string) ([]providers.BatchJob, bool, error) {
		path := "/v1/messages/batches?limit=1000"
		if after != "" {
			path += "&after_id=" + url.QueryEscape(after)
		}
		raw, err := b.call(ctx, http.MethodGet, path, b.header(), nil)
		if err != nil {
			return nil, false, err
		}
		l := gjson.ParseBytes(raw)
		var jobs []providers.BatchJob
		for _, o := range l.Get("data").Array() {
			jobs = append(jobs, batchJobOf([]byte(o.Raw)))
		}
		return jobs, l.Get("has_more").Bool(), nil
	})
}

// SentIDs implements providers.BatchClient: unsupported, a running
// MessageBatch does not show its requests.
func (b *Batch) SentIDs(context.Context, providers.BatchJob, func(string) error) error {
	return fmt.Errorf("anthropic: the custom_ids of a message batch are known only from its results: %w", errors.ErrUnsupported)
}

// Poll implements providers.BatchClient.
func (b *Batch) Poll(ctx context.Context, id string) (providers.BatchJob, error) {
	return b.job(ctx, http.MethodGet, "/v1/messages/batches/"+url.PathEscape(id), b.header(), nil)
}

// Cancel implements providers.BatchClient.
func (b *Batch) Cancel(ctx context.Context, id string) (providers.BatchJob, error) {
	return b.job(ctx, http.MethodPost, "/v1/messages/batches/"+url.PathEscape(id)+"/cancel", b.header(), nil)
}

// Results implements providers.BatchClient: it streams results_url (read
// again from the batch if job lacks it). The API key is sent only to the
// host of BaseURL: a results_url elsewhere is an error, not a leak.
func (b *Batch) Results(ctx context.Context, job providers.BatchJob, fn func(providers.BatchResult) error) error {
	if job.ResultsURL == "" {
		var err error
		if job, err = b.Poll(ctx, job.ID); err != nil {
			return err
		}
		if job.ResultsURL == "" {
			return &providers.Error{Class: providers.ClassServer, Message: "batch " + job.ID + " has no results_url yet (processing_status " + job.Status + ")"}
		}
	}
	ru, err := url.Parse(job.ResultsURL)
	base, berr := url.Parse(b.cfg.BaseURL)
	if err != nil || berr != nil || ru.Host != base.Host || (ru.Scheme != base.Scheme && ru.Scheme != "https") {
		return &providers.Error{Class: providers.ClassInvalid, Message: "results_url " + providers.StripUserinfo(job.ResultsURL) + " is not on " + providers.StripUserinfo(b.cfg.BaseURL) + "; not sending the API key there"}
	}
	h := b.header()
	h.Set("Accept", "application/binary")
	return b.cfg.GetLines(ctx, job.ResultsURL, h, b.statusError, providers.EachResult(batchParseResult, fn))
}

// batchParseResult converts one results line.
func batchParseResult(line []byte) (providers.BatchResult, error) {
	l, r, err := providers.ResultLine(line, "results")
	if err != nil {
		return r, err
	}
	res := l.Get("result")
	switch typ := res.Get("type").Str; typ {
	case "succeeded":
		msg := res.Get("message")
		r.Outcome, r.Status, r.Body, r.Model = providers.OutcomeSucceeded, http.StatusOK, []byte(msg.Raw), msg.Get("model").Str
		r.Usage = usage(msg.Get("usage"))
	case "errored":
		eb := res.Get("error")
		r.Outcome, r.Body = providers.OutcomeErrored, []byte(eb.Raw)
		r.RequestID = eb.Get("request_id").Str
		r.Err = batchErrorOf(0, r.Body)
		r.Err.RequestID = r.RequestID
		r.Status = r.Err.Status
	case "expired":
		r.Outcome = providers.OutcomeExpired
		r.Err = &providers.Error{Code: "batch_expired", Message: "the request was not processed before the batch expired"}
	case "canceled":
		r.Outcome = providers.OutcomeCanceled
		r.Err = &providers.Error{Code: "batch_cancelled", Message: "the request was not processed: the batch was cancelled"}
	default:
		return r, &providers.Error{Class: providers.ClassServer, Message: "unknown result type " + typ + " for " + r.CustomID}
	}
	return r, nil
}

// batchTypeStatus is the HTTP status an Anthropic error type stands for.
var batchTypeStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

// batchErrorOf classifies an error body ({"type":"error","error":{"type",
// "message","details"?},"request_id"}); status 0 takes it from the type.
func batchErrorOf(status int, body []byte) *providers.Error {
	eb := gjson.GetBytes(body, "error")
	typ := eb.Get("type").Str
	if status == 0 {
		status = batchTypeStatus[typ]
	}
	e := &providers.Error{Class: providers.ClassifyStatus(status), Status: status, Type: typ, Code: eb.Get("details.error_code").Str, Message: eb.Get("message").Str, Body: body}
	switch {
	case typ == "overloaded_error":
		e.Class = providers.ClassOverloaded
	case typ == "billing_error" || e.Code != "" && strings.Contains(e.Code, "spend_limit"):
		e.Class = providers.ClassQuota
	case typ == "timeout_error":
		e.Class = providers.ClassTimeout
	}
	return e
}

// statusError reads a non-2xx answer into a typed error.
func (b *Batch) statusError(resp *http.Response) error {
	return b.cfg.RefinedStatusError(resp, "request-id", batchErrorOf)
}

// batchMaxAnswer bounds the JSON answers of the batch calls.
const batchMaxAnswer = 16 << 20

// job sends one call answered with a MessageBatch.
func (b *Batch) job(ctx context.Context, method, path string, h http.Header, body []byte) (providers.BatchJob, error) {
	raw, err := b.call(ctx, method, path, h, body)
	if err != nil {
		return providers.BatchJob{}, err
	}
	if gjson.GetBytes(raw, "id").Str == "" {
		return providers.BatchJob{}, &providers.Error{Class: providers.ClassServer, Message: "unparsable message batch", Body: providers.Redact(raw, b.cfg.Secret())}
	}
	return batchJobOf(raw), nil
}

// call sends one call and returns its JSON answer.
func (b *Batch) call(ctx context.Context, method, path string, h http.Header, body []byte) ([]byte, error) {
	return b.cfg.CallJSON(ctx, providers.Call{Method: method, URL: b.cfg.BaseURL + path, Header: h, Body: body,
		MaxAnswer: batchMaxAnswer, RequestIDHeader: "request-id", StatusError: b.statusError})
}

// batchJobOf converts a MessageBatch.
func batchJobOf(raw []byte) providers.BatchJob {
	o := gjson.ParseBytes(raw)
	rc := o.Get("request_counts")
	j := providers.BatchJob{
		ID:         o.Get("id").Str,
		Status:     o.Get("processing_status").Str,
		Succeeded:  int(rc.Get("succeeded").Int()),
		Failed:     int(rc.Get("errored").Int()),
		Expired:    int(rc.Get("expired").Int()),
		Canceled:   int(rc.Get("canceled").Int()),
		ResultsURL: o.Get("results_url").Str,
	}
	j.Total = int(rc.Get("processing").Int()) + j.Succeeded + j.Failed + j.Expired + j.Canceled
	j.Created, _ = time.Parse(time.RFC3339Nano, o.Get("created_at").Str)
	j.Ended = j.Status == "ended"
	return j
}
