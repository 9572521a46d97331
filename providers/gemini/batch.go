package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// The Gemini Batch API (wire-formats §5.7): one POST
// models/{model}:batchGenerateContent creates the batch, answered with a
// long-running Operation; GET batches/{id} polls it; once done, its output
// holds the responses, each tagged with its request's key. A batch up to
// MaxInlineBytes sends its requests inline, in the create call, and gets
// its responses inline; a larger one uploads them as a JSONL file through
// the Files API (a resumable upload) and names it in inputConfig.fileName,
// and its responses come back as a file too (output.responsesFile), read
// line by line.
//
// The API's own words for a batch's state (BATCH_STATE_RUNNING, or
// JOB_STATE_RUNNING in the SDKs) are reported without their prefix, in
// lower case: pending, running, succeeded, failed, cancelled, expired.
// An expired or cancelled batch has results only for the requests that
// ran; the others are left for the runner to report.

// MaxInlineBytes is the largest batch whose requests go inline: a create
// call may total 20 MB (the envelope and the display name taken off).
// Larger batches go as an input file.
const MaxInlineBytes = 20_000_000 - 1024

// Batch limits: an input file may hold 2 GB; Google documents no count
// limit.
const (
	batchMaxItems = 50_000
	batchMaxBytes = 2_000_000_000
	// batchMaxKey bounds a key as llmrun sends it.
	batchMaxKey = 256
	// batchMaxAnswer bounds an Operation read whole: it holds the inline
	// responses of a batch of up to 20 MB of requests.
	batchMaxAnswer = 1 << 30
	// batchPageSize is how many batches one list call asks for.
	batchPageSize = 1000
)

// Batch is a Gemini Batch API client. It is safe for concurrent use.
type Batch struct {
	cfg  providers.Config
	base string
	// inline is the largest batch sent inline (MaxInlineBytes).
	inline int64
}

var _ providers.BatchClient = (*Batch)(nil)

// BatchOption adjusts a Batch client.
type BatchOption func(*Batch)

// InlineUpTo makes batches of up to n bytes go inline and larger ones as
// a file, in place of MaxInlineBytes: a test sends a file without
// uploading 20 MB.
func InlineUpTo(n int64) BatchOption { return func(b *Batch) { b.inline = n } }

// NewBatch returns a Batch API client for cfg (BaseURL as for New; Stream
// is ignored).
func NewBatch(cfg providers.Config, opts ...BatchOption) *Batch {
	cfg.SplitQuery()
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = providers.NewHTTPClient(0)
	}
	b := &Batch{cfg: cfg, base: apiRoot(cfg.BaseURL), inline: MaxInlineBytes}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Name implements providers.BatchClient.
func (b *Batch) Name() string { return Name }

// Format implements providers.BatchClient.
func (b *Batch) Format() providers.Format { return providers.FormatGemini }

// BaseURL implements providers.BatchClient: the base URL without userinfo.
func (b *Batch) BaseURL() string { return providers.StripUserinfo(b.cfg.BaseURL) }

// MaxItems implements providers.BatchClient.
func (b *Batch) MaxItems() int { return batchMaxItems }

// MaxBytes implements providers.BatchClient: an input file's 2 GB.
func (b *Batch) MaxBytes() int64 { return batchMaxBytes }

// ItemSize implements providers.BatchClient: the item's bytes in the
// request body, its separating comma included.
func (b *Batch) ItemSize(it providers.BatchItem) int64 {
	body, _, err := prepare(it.Body)
	if err != nil {
		body = it.Body
	}
	return int64(len(batchAppendItem(nil, it.CustomID, body)) + 1)
}

// ValidID implements providers.BatchClient: a key is free text; llmrun
// sends printable UTF-8 of at most 256 bytes.
func (b *Batch) ValidID(id string) bool {
	if id == "" || len(id) > batchMaxKey || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Batches implements providers.EndpointBatcher: chat only. Gemini
// batches embeddings through another call (asyncBatchEmbedContent, one
// input per request, results under another name), which this client does
// not speak yet.
func (b *Batch) Batches(ep providers.Endpoint) (bool, string) {
	if ep == providers.EndpointChat {
		return true, ""
	}
	return false, "this client sends Gemini batches of generateContent requests only (embeddings go through asyncBatchEmbedContent, which it does not speak)"
}

// Labels implements providers.BatchClient: a batch's displayName shows in
// Google's console, but List cannot find llmrun's batches by it, so no
// label is kept.
func (b *Batch) Labels() bool { return false }

func batchAppendItem(dst []byte, key string, body []byte) []byte {
	k, _ := json.Marshal(key)
	dst = append(dst, `{"request":`...)
	dst = append(dst, body...)
	dst = append(dst, `,"metadata":{"key":`...)
	dst = append(dst, k...)
	return append(dst, "}}"...)
}

// displayName names a batch for people reading Google's console.
func displayName(label providers.BatchLabel) string {
	if label.Input == "" {
		return "llmrun"
	}
	in := label.Input
	for len(in) > 100 {
		_, n := utf8.DecodeLastRuneInString(in)
		in = in[:len(in)-n]
	}
	return "llmrun " + in
}

// Submit implements providers.BatchClient. A batch names one model (in
// its URL), so every item must ask for the same one. Up to the inline
// limit the requests go in the create call; beyond it they are uploaded
// first, as a file (a failed upload created nothing: the status says so).
func (b *Batch) Submit(ctx context.Context, items []providers.BatchItem, label providers.BatchLabel) (providers.BatchJob, error) {
	var size int64
	for _, it := range items {
		size += b.ItemSize(it)
	}
	file := size > b.inline
	var reqs []byte // inline: the requests array's members; file: its lines
	model := ""
	for i, it := range items {
		req, m, err := prepare(it.Body)
		if err == nil && it.Endpoint != providers.EndpointChat {
			err = fmt.Errorf("the %s endpoint has no Gemini batch", it.Endpoint)
		}
		if err == nil && model != "" && m != model {
			err = fmt.Errorf("asks for %s, the batch for %s: a Gemini batch runs one model", m, model)
		}
		if err != nil {
			// Nothing was sent: the status says the provider created nothing.
			return providers.BatchJob{}, &providers.Error{Class: providers.ClassInvalid, Status: http.StatusBadRequest,
				Message: "request " + it.CustomID + ": " + err.Error(), Err: err}
		}
		model = m
		switch {
		case file:
			reqs = fileAppendItem(reqs, it.CustomID, req)
		case i > 0:
			reqs = append(reqs, ',')
			fallthrough
		default:
			reqs = batchAppendItem(reqs, it.CustomID, req)
		}
	}
	body := append(make([]byte, 0, len(reqs)+256), `{"batch":{"displayName":`...)
	name, _ := json.Marshal(displayName(label))
	body = append(body, name...)
	if file {
		f, err := b.upload(ctx, reqs, displayName(label))
		if err != nil {
			return providers.BatchJob{}, err
		}
		fn, _ := json.Marshal(f)
		body = append(body, `,"inputConfig":{"fileName":`...)
		body = append(append(body, fn...), "}}}"...)
	} else {
		body = append(body, `,"inputConfig":{"requests":{"requests":[`...)
		body = append(append(body, reqs...), "]}}}}"...)
	}
	return b.job(ctx, http.MethodPost, "/"+model+":batchGenerateContent", body)
}

// fileAppendItem appends one line of an input file: {"key", "request"}.
func fileAppendItem(dst []byte, key string, body []byte) []byte {
	k, _ := json.Marshal(key)
	dst = append(dst, `{"key":`...)
	dst = append(dst, k...)
	dst = append(dst, `,"request":`...)
	dst = append(dst, body...)
	return append(dst, "}\n"...)
}

// List implements providers.BatchClient: GET batches, page by page. The
// API promises no order, so every page (up to ListPages) is read and the
// batches created since since are returned newest first.
func (b *Batch) List(ctx context.Context, since time.Time) ([]providers.BatchJob, error) {
	var out []providers.BatchJob
	token := ""
	for range providers.ListPages {
		path := fmt.Sprintf("/batches?pageSize=%d", batchPageSize)
		if token != "" {
			path += "&pageToken=" + url.QueryEscape(token)
		}
		raw, err := b.call(ctx, http.MethodGet, path, nil)
		if err != nil {
			return out, err
		}
		page := gjson.ParseBytes(raw)
		for _, op := range page.Get("operations").Array() {
			if j := b.jobOf(gjson.Parse(op.Raw)); !j.Created.Before(since) {
				out = append(out, j)
			}
		}
		if token = page.Get("nextPageToken").Str; token == "" {
			break
		}
	}
	slices.SortStableFunc(out, func(x, y providers.BatchJob) int { return y.Created.Compare(x.Created) })
	return out, nil
}

// SentIDs implements providers.BatchClient: unsupported; the keys of a
// batch are known from its results.
func (b *Batch) SentIDs(context.Context, providers.BatchJob, func(string) error) error {
	return fmt.Errorf("gemini: the keys of a batch are known only from its results: %w", errors.ErrUnsupported)
}

// Poll implements providers.BatchClient.
func (b *Batch) Poll(ctx context.Context, id string) (providers.BatchJob, error) {
	return b.job(ctx, http.MethodGet, "/"+batchPath(id), nil)
}

// batchPath is a batch's resource name ("batches/{id}"), escaped for a URL.
func batchPath(id string) string {
	return "batches/" + url.PathEscape(strings.TrimPrefix(id, "batches/"))
}

// Cancel implements providers.BatchClient: POST batches/{id}:cancel
// answers an empty object, so the batch is read again. Cancelling a batch
// that has ended is refused as an invalid request.
func (b *Batch) Cancel(ctx context.Context, id string) (providers.BatchJob, error) {
	if _, err := b.call(ctx, http.MethodPost, "/"+batchPath(id)+":cancel", []byte(`{}`)); err != nil {
		var pe *providers.Error
		if errors.As(err, &pe) && pe.Type == "FAILED_PRECONDITION" {
			pe.Class = providers.ClassInvalid // the batch's state, not the account's
		}
		return providers.BatchJob{}, err
	}
	return b.Poll(ctx, id)
}

// Results implements providers.BatchClient: it reads the done batch (at
// job.ResultsURL, which must be on the base URL's host: the key goes
// nowhere else) and streams its inline responses.
func (b *Batch) Results(ctx context.Context, job providers.BatchJob, fn func(providers.BatchResult) error) error {
	where := job.ResultsURL
	if where == "" {
		where = b.base + "/" + batchPath(job.ID)
	}
	if !b.sameHost(where) {
		return &providers.Error{Class: providers.ClassInvalid, Message: "results location " + where + " is not on " + b.BaseURL() + "; not sending the API key there"}
	}
	raw, err := b.fetch(ctx, http.MethodGet, where, nil)
	if err != nil {
		return err
	}
	op := gjson.ParseBytes(raw)
	j := b.jobOf(op)
	if !j.Ended {
		return &providers.Error{Class: providers.ClassServer, Message: "batch " + j.ID + " has no results yet (state " + j.Status + ")"}
	}
	out := op.Get("metadata.output")
	if !out.Exists() {
		out = op.Get("response")
	}
	if f := out.Get("responsesFile").Str; f != "" {
		return b.download(ctx, f, func(line []byte) error { return fn(resultOf(gjson.ParseBytes(line))) })
	}
	for _, r := range out.Get("inlinedResponses.inlinedResponses").Array() {
		if err := fn(resultOf(r)); err != nil {
			return err
		}
	}
	return nil
}

// resultOf converts one response: {"response": …} or {"error": Status},
// with its request's key (inline: in metadata; a file's line: at the top).
func resultOf(r gjson.Result) providers.BatchResult {
	res := providers.BatchResult{CustomID: r.Get("metadata.key").Str}
	if k := r.Get("key"); k.Type == gjson.String {
		res.CustomID = k.Str
	}
	if e := r.Get("error"); e.Exists() {
		body := []byte(`{"error":` + e.Raw + `}`)
		status := int(e.Get("code").Int())
		pe := &providers.Error{Class: providers.ClassifyStatus(status), Status: status, Body: body}
		classifyBody(pe)
		res.Outcome, res.Status, res.Body, res.Err = providers.OutcomeErrored, status, body, pe
		return res
	}
	resp := r.Get("response")
	res.Outcome, res.Status, res.Body = providers.OutcomeSucceeded, http.StatusOK, []byte(resp.Raw)
	res.Model = resp.Get("modelVersion").Str
	res.RequestID = resp.Get("responseId").Str
	res.Usage = usage(resp.Get("usageMetadata"))
	return res
}

// job sends a call answered with an Operation.
func (b *Batch) job(ctx context.Context, method, path string, body []byte) (providers.BatchJob, error) {
	raw, err := b.call(ctx, method, path, body)
	if err != nil {
		return providers.BatchJob{}, err
	}
	op := gjson.ParseBytes(raw)
	if !strings.HasPrefix(op.Get("name").Str, "batches/") {
		return providers.BatchJob{}, &providers.Error{Class: providers.ClassServer, Message: "unparsable batch operation", Body: providers.Redact(raw, b.cfg.Secret())}
	}
	return b.jobOf(op), nil
}

// call sends one call to path under the API root.
func (b *Batch) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	return b.fetch(ctx, method, b.base+path, body)
}

// fetch sends one call and returns its JSON answer.
func (b *Batch) fetch(ctx context.Context, method, u string, body []byte) ([]byte, error) {
	h := header(b.cfg.APIKey)
	if body == nil {
		h.Del("Content-Type")
	}
	return b.cfg.CallJSON(ctx, providers.Call{Method: method, URL: u, Header: h, Body: body,
		MaxAnswer: batchMaxAnswer, RequestIDHeader: requestIDHeader, StatusError: b.statusError})
}

// statusError reads a non-2xx answer into a typed error.
func (b *Batch) statusError(resp *http.Response) error {
	e := b.cfg.StatusError(resp, requestIDHeader)
	classifyBody(e)
	return e
}

// jobOf converts a batch Operation (or the batch itself, as a list may
// show it).
func (b *Batch) jobOf(op gjson.Result) providers.BatchJob {
	m := op.Get("metadata")
	if !m.Exists() {
		m = op
	}
	state := m.Get("state").Str
	for _, p := range []string{"BATCH_STATE_", "JOB_STATE_"} {
		state = strings.TrimPrefix(state, p)
	}
	st := m.Get("batchStats")
	j := providers.BatchJob{
		ID:        op.Get("name").Str,
		Status:    strings.ToLower(state),
		Total:     int(st.Get("requestCount").Int()),
		Succeeded: int(st.Get("successfulRequestCount").Int()),
		Failed:    int(st.Get("failedRequestCount").Int()),
	}
	j.Created, _ = time.Parse(time.RFC3339Nano, m.Get("createTime").Str)
	switch j.Status {
	case "succeeded", "failed", "cancelled", "expired":
		j.Ended = true
	}
	j.Ended = j.Ended || op.Get("done").Bool()
	unrun := int(st.Get("pendingRequestCount").Int())
	switch j.Status {
	case "expired":
		j.Expired = unrun
	case "cancelled":
		j.Canceled = unrun
	case "failed":
		j.Error = op.Get("error.message").Str
		if j.Error == "" {
			j.Error = "the batch failed"
		}
	}
	if j.Ended {
		j.ResultsURL = b.base + "/" + batchPath(j.ID)
	}
	return j
}
