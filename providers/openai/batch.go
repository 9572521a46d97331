package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/utf8cut"
	"github.com/llmrun/llmrun/providers"
)

// The OpenAI Batch API (wire-formats §3): the requests go up as a JSONL
// file (POST /files, purpose=batch), a batch is created on it (POST
// /batches), polled (GET /batches/{id}), and its output and error files are
// downloaded (GET /files/{id}/content) once it has ended.

// Batch limits per input file. The documented 200 MB is taken in decimal
// units, the smaller reading.
const (
	batchMaxItems = 50_000
	batchMaxBytes = 200_000_000
	// batchMaxID bounds the custom_ids sent as they are; longer ones are
	// mapped. OpenAI documents no limit, a 64-character one is rumoured.
	batchMaxID = 64
)

// Batch is an OpenAI Batch API client. It is safe for concurrent use.
type Batch struct {
	cfg providers.Config
	d   BatchDialect
}

var _ providers.BatchClient = (*Batch)(nil)

// BatchDialect is how a server's batch API differs from api.openai.com's
// (Azure OpenAI's: other paths, an api-version, the api-key header); the
// zero value is OpenAI's own.
type BatchDialect struct {
	// Name is what Batch.Name returns; "" is "openai".
	Name string
	// BaseURL is what Batch.BaseURL returns, before its userinfo is
	// stripped; "" is Config.BaseURL.
	BaseURL string
	// URL returns the URL of an API path ("/files?purpose=batch"); nil
	// appends it to Config.BaseURL.
	URL func(path string) string
	// Header holds the credential headers; nil sends "Authorization:
	// Bearer <key>", or nothing without a key.
	Header http.Header
	// Body adjusts an item's body as it goes into the input file (Azure
	// names the batch deployment in model); nil leaves it. It must not
	// modify its input.
	Body func(body []byte) ([]byte, error)
}

// NewBatch returns a Batch API client for cfg (BaseURL ".../v1"; Stream is
// ignored).
func NewBatch(cfg providers.Config) *Batch { return NewBatchDialect(cfg, BatchDialect{}) }

// NewBatchDialect returns a Batch API client speaking d.
func NewBatchDialect(cfg providers.Config, d BatchDialect) *Batch {
	cfg.SplitQuery()
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if d.Name == "" {
		d.Name = "openai"
	}
	if d.BaseURL == "" {
		d.BaseURL = cfg.BaseURL
	}
	if d.URL == nil {
		base := cfg.BaseURL
		d.URL = func(path string) string { return base + path }
	}
	return &Batch{cfg: cfg, d: d}
}

// Name implements providers.BatchClient.
func (b *Batch) Name() string { return b.d.Name }

// Format implements providers.BatchClient.
func (b *Batch) Format() providers.Format { return providers.FormatOpenAI }

// BaseURL implements providers.BatchClient: the base URL without userinfo.
func (b *Batch) BaseURL() string { return providers.StripUserinfo(b.d.BaseURL) }

// MaxItems implements providers.BatchClient: 50,000 lines per file, and
// as many embedding inputs (see providers.BatchUnits).
func (b *Batch) MaxItems() int { return batchMaxItems }

// MaxBytes implements providers.BatchClient: 200 MB per file.
func (b *Batch) MaxBytes() int64 { return batchMaxBytes }

// ItemSize implements providers.BatchClient: the length of the item's line
// in the input file, newline included.
func (b *Batch) ItemSize(it providers.BatchItem) int64 {
	line, err := b.appendLine(nil, it)
	if err != nil {
		return int64(len(it.Body)) + 128
	}
	return int64(len(line))
}

// ValidID implements providers.BatchClient: 1 to 64 bytes of printable
// UTF-8.
func (b *Batch) ValidID(id string) bool {
	if id == "" || len(id) > batchMaxID || !utf8.ValidString(id) {
		return false
	}
	return strings.IndexFunc(id, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// appendLine appends the input-file line of it: its url is its endpoint's.
func (b *Batch) appendLine(dst []byte, it providers.BatchItem) ([]byte, error) {
	body := it.Body
	if b.d.Body != nil {
		var err error
		if body, err = b.d.Body(body); err != nil {
			return dst, err
		}
	}
	id, _ := json.Marshal(it.CustomID)
	dst = append(dst, `{"custom_id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"method":"POST","url":"`...)
	dst = append(dst, it.Endpoint.Path()...)
	dst = append(dst, `","body":`...)
	dst = append(dst, body...)
	return append(dst, "}\n"...), nil
}

func (b *Batch) header() http.Header {
	h := make(http.Header, 2)
	switch {
	case b.d.Header != nil:
		for k, v := range b.d.Header {
			h[k] = v
		}
	case b.cfg.APIKey != "":
		h.Set("Authorization", "Bearer "+b.cfg.APIKey)
	}
	return h
}

// Labels implements providers.BatchClient: the label goes into the batch's
// metadata (llmrun_job, llmrun_tag, llmrun_input).
func (b *Batch) Labels() bool { return true }

// Submit implements providers.BatchClient: it uploads the items as a JSONL
// file and creates a batch on it, labelled in its metadata. The file is
// named after a hash of its content, so that with label.Resume a file an
// interrupted attempt uploaded is found and used again, not uploaded twice.
func (b *Batch) Submit(ctx context.Context, items []providers.BatchItem, label providers.BatchLabel) (providers.BatchJob, error) {
	var file []byte
	for _, it := range items {
		if it.Endpoint != items[0].Endpoint {
			return providers.BatchJob{}, &providers.Error{Class: providers.ClassInvalid,
				Message: fmt.Sprintf("one batch holds one endpoint: %s and %s requests mixed", items[0].Endpoint, it.Endpoint)}
		}
		var err error
		if file, err = b.appendLine(file, it); err != nil {
			return providers.BatchJob{}, &providers.Error{Class: providers.ClassInvalid, Message: "request " + it.CustomID + ": " + err.Error(), Err: err}
		}
	}
	endpoint := providers.EndpointChat.Path()
	if len(items) > 0 {
		endpoint = items[0].Endpoint.Path()
	}
	sum := sha256.Sum256(file)
	name := "llmrun-" + hex.EncodeToString(sum[:8]) + ".jsonl"
	fileID := ""
	if label.Resume {
		var err error
		if fileID, err = b.findFile(ctx, name, len(file)); err != nil && ctx.Err() != nil {
			return providers.BatchJob{}, err
		}
	}
	if fileID == "" {
		var err error
		if fileID, err = b.upload(ctx, name, file); err != nil {
			return providers.BatchJob{}, err
		}
	}
	meta := map[string]string{"created_by": "llmrun"}
	for k, v := range map[string]string{"llmrun_job": label.Job, "llmrun_tag": label.Tag, "llmrun_input": label.Input} {
		if v != "" {
			meta[k] = utf8cut.Prefix(v, providers.MaxLabelValue)
		}
	}
	req, _ := json.Marshal(map[string]any{
		"input_file_id":     fileID,
		"endpoint":          endpoint,
		"completion_window": "24h",
		"metadata":          meta,
	})
	h := b.header()
	h.Set("Content-Type", "application/json")
	return b.job(ctx, http.MethodPost, "/batches", h, req)
}

// upload sends file as a batch input file named name.
func (b *Batch) upload(ctx context.Context, name string, file []byte) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("purpose", "batch")
	ph := make(textproto.MIMEHeader)
	ph.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
	ph.Set("Content-Type", "application/jsonl")
	pw, _ := mw.CreatePart(ph)
	pw.Write(file)
	mw.Close()
	h := b.header()
	h.Set("Content-Type", mw.FormDataContentType())
	var up struct {
		ID string `json:"id"`
	}
	if err := b.do(ctx, http.MethodPost, "/files", h, body.Bytes(), &up); err != nil {
		return "", err
	}
	if up.ID == "" {
		return "", &providers.Error{Class: providers.ClassServer, Message: "file upload answered without a file id"}
	}
	return up.ID, nil
}

// findFile returns the id of a recent batch input file called name of size
// bytes, or "".
func (b *Batch) findFile(ctx context.Context, name string, size int) (string, error) {
	var l struct {
		Data []struct {
			ID       string `json:"id"`
			Filename string `json:"filename"`
			Bytes    int    `json:"bytes"`
		} `json:"data"`
	}
	if err := b.do(ctx, http.MethodGet, "/files?purpose=batch&order=desc&limit=100", b.header(), nil, &l); err != nil {
		return "", err
	}
	for _, f := range l.Data {
		if f.Filename == name && f.Bytes == size {
			return f.ID, nil
		}
	}
	return "", nil
}

// List implements providers.BatchClient: GET /batches, newest first, 100 a
// page.
func (b *Batch) List(ctx context.Context, since time.Time) ([]providers.BatchJob, error) {
	return providers.ListSince(since, func(after string) ([]providers.BatchJob, bool, error) {
		path := "/batches?limit=100"
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		var l struct {
			Data    []json.RawMessage `json:"data"`
			HasMore bool              `json:"has_more"`
		}
		if err := b.do(ctx, http.MethodGet, path, b.header(), nil, &l); err != nil {
			return nil, false, err
		}
		jobs := make([]providers.BatchJob, len(l.Data))
		for i, raw := range l.Data {
			jobs[i] = batchJobOf(raw)
		}
		return jobs, l.HasMore, nil
	})
}

// SentIDs implements providers.BatchClient: it reads the custom_ids of the
// batch's input file.
func (b *Batch) SentIDs(ctx context.Context, job providers.BatchJob, fn func(string) error) error {
	if job.InputFileID == "" {
		return &providers.Error{Class: providers.ClassInvalid, Message: "batch " + job.ID + " names no input file"}
	}
	return b.lines(ctx, job.InputFileID, func(line []byte) error {
		id := gjson.GetBytes(line, "custom_id")
		if id.Type != gjson.String {
			return &providers.Error{Class: providers.ClassServer, Message: "input file " + job.InputFileID + ": a line without custom_id"}
		}
		return fn(id.Str)
	})
}

// Poll implements providers.BatchClient.
func (b *Batch) Poll(ctx context.Context, id string) (providers.BatchJob, error) {
	return b.job(ctx, http.MethodGet, "/batches/"+url.PathEscape(id), b.header(), nil)
}

// Cancel implements providers.BatchClient.
func (b *Batch) Cancel(ctx context.Context, id string) (providers.BatchJob, error) {
	return b.job(ctx, http.MethodPost, "/batches/"+url.PathEscape(id)+"/cancel", b.header(), nil)
}

// Results implements providers.BatchClient: it streams the output file,
// then the error file.
func (b *Batch) Results(ctx context.Context, job providers.BatchJob, fn func(providers.BatchResult) error) error {
	for _, id := range []string{job.OutputFileID, job.ErrorFileID} {
		if id == "" {
			continue
		}
		if err := b.download(ctx, id, fn); err != nil {
			return err
		}
	}
	return nil
}

func (b *Batch) download(ctx context.Context, fileID string, fn func(providers.BatchResult) error) error {
	return b.lines(ctx, fileID, providers.EachResult(batchParseResult, fn))
}

// lines streams the lines of a file's content.
func (b *Batch) lines(ctx context.Context, fileID string, fn func([]byte) error) error {
	h := b.header()
	h.Set("Accept", "application/binary")
	return b.cfg.GetLines(ctx, b.d.URL("/files/"+url.PathEscape(fileID)+"/content"), h, b.statusError, fn)
}

// batchParseResult converts one output- or error-file line.
func batchParseResult(line []byte) (providers.BatchResult, error) {
	l, r, err := providers.ResultLine(line, "result file")
	if err != nil {
		return r, err
	}
	resp := l.Get("response")
	if resp.IsObject() {
		r.Status = int(resp.Get("status_code").Int())
		r.RequestID = resp.Get("request_id").Str
		body := resp.Get("body")
		r.Body = []byte(body.Raw)
		r.Model = body.Get("model").Str
		if r.Status/100 == 2 {
			r.Outcome = providers.OutcomeSucceeded
			r.Usage = usage(body.Get("usage"))
			return r, nil
		}
		r.Outcome = providers.OutcomeErrored
		r.Err = batchErrorOf(r.Status, r.Body)
		r.Err.RequestID = r.RequestID
		return r, nil
	}
	code, msg := l.Get("error.code").Str, l.Get("error.message").Str
	switch code {
	case "batch_expired":
		r.Outcome = providers.OutcomeExpired
	case "batch_cancelled", "batch_canceled":
		r.Outcome, code = providers.OutcomeCanceled, "batch_cancelled"
	default:
		r.Outcome = providers.OutcomeErrored
	}
	if code == "" {
		code = "batch_error"
	}
	r.Err = &providers.Error{Class: providers.ClassUnknown, Code: code, Message: msg}
	return r, nil
}

// batchErrorOf classifies an error answer from its status and body
// ({"error":{"message","type","code"}}).
func batchErrorOf(status int, body []byte) *providers.Error {
	e := &providers.Error{Class: providers.ClassifyStatus(status), Status: status, Body: body}
	eb := gjson.GetBytes(body, "error")
	e.Type, e.Code, e.Message = eb.Get("type").Str, eb.Get("code").Str, eb.Get("message").Str
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" {
		e.Class = providers.ClassQuota
	}
	return e
}

// statusError reads a non-2xx answer into a typed error.
func (b *Batch) statusError(resp *http.Response) error {
	return b.cfg.RefinedStatusError(resp, "x-request-id", batchErrorOf)
}

// do sends one API call and decodes its JSON answer into out.
func (b *Batch) do(ctx context.Context, method, path string, h http.Header, body []byte, out any) error {
	_, err := b.cfg.CallJSON(ctx, providers.Call{Method: method, URL: b.d.URL(path), Header: h, Body: body,
		MaxAnswer: batchMaxAnswer, RequestIDHeader: "x-request-id", StatusError: b.statusError,
		Decode: func(raw []byte) error { return json.Unmarshal(raw, out) }})
	return err
}

// job sends a call answered with a Batch object.
func (b *Batch) job(ctx context.Context, method, path string, h http.Header, body []byte) (providers.BatchJob, error) {
	var raw json.RawMessage
	if err := b.do(ctx, method, path, h, body, &raw); err != nil {
		return providers.BatchJob{}, err
	}
	return batchJobOf(raw), nil
}

// batchJobOf converts a Batch object.
func batchJobOf(raw []byte) providers.BatchJob {
	o := gjson.ParseBytes(raw)
	j := providers.BatchJob{
		ID:           o.Get("id").Str,
		Status:       o.Get("status").Str,
		Total:        int(o.Get("request_counts.total").Int()),
		Succeeded:    int(o.Get("request_counts.completed").Int()),
		Failed:       int(o.Get("request_counts.failed").Int()),
		InputFileID:  o.Get("input_file_id").Str,
		OutputFileID: o.Get("output_file_id").Str,
		ErrorFileID:  o.Get("error_file_id").Str,
		Label: providers.BatchLabel{Job: o.Get("metadata.llmrun_job").Str, Tag: o.Get("metadata.llmrun_tag").Str,
			Input: o.Get("metadata.llmrun_input").Str},
	}
	if c := o.Get("created_at"); c.Type == gjson.Number {
		j.Created = time.Unix(c.Int(), 0).UTC()
	}
	switch j.Status {
	case "completed", "failed":
		j.Ended = true
	case "expired":
		j.Ended, j.Expired = true, max(j.Total-j.Succeeded-j.Failed, 0)
	case "cancelled":
		j.Ended, j.Canceled = true, max(j.Total-j.Succeeded-j.Failed, 0)
	}
	if j.Status == "failed" {
		var msgs []string
		o.Get("errors.data").ForEach(func(_, e gjson.Result) bool {
			m := e.Get("message").Str
			if c := e.Get("code").Str; c != "" {
				m = c + ": " + m
			}
			if ln := e.Get("line"); ln.Type == gjson.Number {
				m += " (line " + ln.Raw + ")"
			}
			msgs = append(msgs, m)
			return true
		})
		j.Error = strings.Join(msgs, "; ")
		if j.Error == "" {
			j.Error = "the batch failed"
		}
	}
	return j
}

// batchMaxAnswer bounds the JSON answers of the batch and file calls.
const batchMaxAnswer = 16 << 20
