package mock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The OpenAI Batch API: upload a JSONL file (purpose=batch), create a batch
// on it, poll the batch, download its output and error files.

// multipartSlack is what the multipart framing may add to an upload.
const multipartSlack = 1 << 20

func (s *Server) handleFileUpload(w http.ResponseWriter, r *http.Request) {
	d := openAI{}
	reqID, ok := s.batchPrelude(w, r, d, false)
	if !ok {
		return
	}
	_, maxBytes := s.batchLimits(openAIBatchMaxItems, openAIBatchMaxBytes)
	r.Body = http.MaxBytesReader(w, r.Body, maxBytes+multipartSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		s.badRequest(w, d, reqID, errInvalid("file", "Expected a multipart/form-data body: "+err.Error()))
		return
	}
	var purpose, filename string
	var data []byte
	var haveFile bool
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.uploadFailed(w, reqID, err, maxBytes)
			return
		}
		switch p.FormName() {
		case "purpose":
			v, err := io.ReadAll(io.LimitReader(p, 64))
			if err != nil {
				s.uploadFailed(w, reqID, err, maxBytes)
				return
			}
			purpose = string(v)
		case "file":
			filename, haveFile = p.FileName(), true
			data, err = io.ReadAll(io.LimitReader(p, maxBytes+1))
			if err != nil {
				s.uploadFailed(w, reqID, err, maxBytes)
				return
			}
			if int64(len(data)) > maxBytes {
				s.uploadFailed(w, reqID, &http.MaxBytesError{Limit: maxBytes}, maxBytes)
				return
			}
		}
		p.Close()
	}
	var aerr *apiError
	switch {
	case !haveFile:
		aerr = errInvalid("file", "Missing required parameter: 'file'.")
	case purpose != "batch":
		aerr = errInvalid("purpose", "The mock accepts purpose 'batch' only, got '"+purpose+"'.")
	case !strings.HasSuffix(filename, ".jsonl"):
		aerr = errInvalid("file", "Invalid file format for Batch API. Must be .jsonl")
	}
	if aerr != nil {
		s.badRequest(w, d, reqID, aerr)
		return
	}
	f := &mfile{filename: filename, purpose: purpose, created: s.now(), data: data}
	s.batches.mu.Lock()
	s.storeFile(f)
	body := appendFileObject(nil, f)
	s.batches.mu.Unlock()
	s.bump(&s.stats.FilesUploaded)
	s.holdAnswer(r)
	writeJSON(w, body)
}

// handleFileList answers GET /v1/files: the files, newest first (order=asc
// reverses), filtered by purpose, paged by limit (default and at most
// 10,000) and after.
func (s *Server) handleFileList(w http.ResponseWriter, r *http.Request) {
	d := openAI{}
	reqID, ok := s.batchPrelude(w, r, d, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit, aerr := listLimit(r, 10_000, 10_000)
	if aerr != nil {
		s.badRequest(w, d, reqID, aerr)
		return
	}
	s.batches.mu.Lock()
	var files []*mfile
	for _, f := range s.batches.fileList {
		if p := q.Get("purpose"); p == "" || f.purpose == p {
			files = append(files, f)
		}
	}
	if q.Get("order") == "asc" {
		slices.Reverse(files)
	}
	page, more := listPage(files, func(f *mfile) string { return f.id }, q.Get("after"), limit)
	b := []byte(`{"object":"list","data":[`)
	for i, f := range page {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFileObject(b, f)
	}
	s.batches.mu.Unlock()
	writeJSON(w, appendListEnd(b, page, func(f *mfile) string { return f.id }, more))
}

// appendListEnd closes an OpenAI-style list: first_id, last_id, has_more.
func appendListEnd[T any](b []byte, page []T, id func(T) string, more bool) []byte {
	b = append(b, `],"first_id":`...)
	if len(page) > 0 {
		b = appendString(b, id(page[0]))
		b = append(b, `,"last_id":`...)
		b = appendString(b, id(page[len(page)-1]))
	} else {
		b = append(b, `null,"last_id":null`...)
	}
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, more)
	return append(b, '}')
}

func (s *Server) uploadFailed(w http.ResponseWriter, reqID string, err error, maxBytes int64) {
	s.bump(&s.stats.BadRequests)
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		s.fail(w, openAI{}, reqID, errBatchTooLarge("File is too large: batch input files are limited to "+strconv.FormatInt(maxBytes, 10)+" bytes."))
		return
	}
	s.fail(w, openAI{}, reqID, errInvalid("file", "Could not read the upload: "+err.Error()))
}

// storeFile gives f an id and keeps it. Requires bs.mu.
func (s *Server) storeFile(f *mfile) {
	bs := &s.batches
	f.id = bs.nextID("file-mock")
	if bs.files == nil {
		bs.files = make(map[string]*mfile)
	}
	bs.files[f.id] = f
	bs.fileList = append(bs.fileList, f)
}

func appendFileObject(b []byte, f *mfile) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, f.id)
	b = append(b, `,"object":"file","bytes":`...)
	b = appendInt(b, len(f.data))
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, f.created.Unix(), 10)
	b = append(b, `,"expires_at":`...)
	b = strconv.AppendInt(b, f.created.Add(30*24*time.Hour).Unix(), 10)
	b = append(b, `,"filename":`...)
	b = appendString(b, f.filename)
	b = append(b, `,"purpose":`...)
	b = appendString(b, f.purpose)
	return append(b, `,"status":"processed","status_details":null}`...)
}

func (s *Server) handleFileGet(w http.ResponseWriter, r *http.Request) {
	f, ok := s.fileOf(w, r)
	if ok {
		writeJSON(w, appendFileObject(nil, f))
	}
}

func (s *Server) handleFileContent(w http.ResponseWriter, r *http.Request) {
	f, ok := s.fileOf(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	w.Write(f.data)
}

// fileOf returns the file named in the path or writes the failure.
func (s *Server) fileOf(w http.ResponseWriter, r *http.Request) (*mfile, bool) {
	reqID, ok := s.batchPrelude(w, r, openAI{}, false)
	if !ok {
		return nil, false
	}
	id := r.PathValue("id")
	s.batches.mu.Lock()
	f := s.batches.files[id]
	s.batches.mu.Unlock()
	if f == nil {
		s.bump(&s.stats.NotFound)
		s.fail(w, openAI{}, reqID, errNoSuch("file", id))
		return nil, false
	}
	return f, true
}

func (s *Server) handleOABatchCreate(w http.ResponseWriter, r *http.Request) {
	d := openAI{}
	reqID, ok := s.batchPrelude(w, r, d, true)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		s.badRequest(w, d, reqID, errTooLarge())
		return
	}
	var in struct {
		InputFileID      string          `json:"input_file_id"`
		Endpoint         string          `json:"endpoint"`
		CompletionWindow string          `json:"completion_window"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.badRequest(w, d, reqID, errInvalid("", "We could not parse the JSON body of your request: "+err.Error()))
		return
	}
	var aerr *apiError
	switch {
	case in.InputFileID == "":
		aerr = errInvalid("input_file_id", "Missing required parameter: 'input_file_id'.")
	case itemDialect(r.URL.Path, in.Endpoint) == nil:
		aerr = errInvalid("endpoint", "Invalid 'endpoint': the mock batches "+batchEndpoints+", got '"+in.Endpoint+"'.")
	case in.CompletionWindow != "24h":
		aerr = errInvalid("completion_window", "Invalid 'completion_window': expected '24h'.")
	}
	if aerr != nil {
		s.badRequest(w, d, reqID, aerr)
		return
	}
	now := s.now()
	s.batches.mu.Lock()
	f := s.batches.files[in.InputFileID]
	if f == nil || f.purpose != "batch" {
		s.batches.mu.Unlock()
		s.bump(&s.stats.NotFound)
		s.fail(w, d, reqID, errNoSuch("batch input file", in.InputFileID))
		return
	}
	b := &mbatch{d: itemDialect(r.URL.Path, in.Endpoint), created: now, inputFile: f.id, endpoint: in.Endpoint}
	if len(in.Metadata) > 0 && string(in.Metadata) != "null" {
		b.metadata = in.Metadata
	}
	maxItems, _ := s.batchLimits(openAIBatchMaxItems, openAIBatchMaxBytes)
	b.items, b.invalid = parseOpenAIInput(f.data, in.Endpoint, maxItems)
	if b.invalid == nil {
		b.invalid = embeddingsBatchLimit(b.items, in.Endpoint, maxItems)
	}
	if b.invalid != nil {
		b.items = nil
	}
	s.register(b, "batch_mock")
	body = s.appendOABatch(nil, b, now, true)
	s.batches.mu.Unlock()
	s.holdAnswer(r)
	writeJSON(w, body)
}

// handleOABatchList answers GET /v1/batches: the batches, newest first,
// paged by limit (default 20, at most 100) and after.
func (s *Server) handleOABatchList(w http.ResponseWriter, r *http.Request) {
	s.listBatches(w, r, openAI{}, 100, "after", `{"object":"list","data":[`, func(b []byte, m *mbatch, now time.Time) []byte {
		return s.appendOABatch(b, m, now, false)
	})
}

// parseOpenAIInput validates an input file as OpenAI does before a batch
// runs: every line a JSON object with a unique custom_id, method POST, the
// batch's url and a body object; at most maxItems lines. It returns the
// items or the problems (at most 10).
func parseOpenAIInput(data []byte, endpoint string, maxItems int) ([]bitem, []lineError) {
	var items []bitem
	var errs []lineError
	seen := make(map[string]bool)
	add := func(e lineError) {
		if len(errs) < 10 {
			errs = append(errs, e)
		}
	}
	lineNo := 0
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var in struct {
			CustomID *string         `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(line, &in); err != nil {
			add(lineError{code: "invalid_json_line", line: lineNo, message: "This line is not parseable as valid JSON."})
			continue
		}
		switch {
		case in.CustomID == nil || *in.CustomID == "":
			add(lineError{code: "missing_required_parameter", line: lineNo, param: "custom_id", message: "Missing required parameter: 'custom_id'."})
		case seen[*in.CustomID]:
			add(lineError{code: "duplicate_custom_id", line: lineNo, param: "custom_id", message: "The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch."})
		case in.Method != "POST":
			add(lineError{code: "invalid_value", line: lineNo, param: "method", message: "Invalid value for 'method': only POST is supported."})
		case in.URL != endpoint:
			add(lineError{code: "url_mismatch", line: lineNo, param: "url", message: "The provided URL for this request does not match the batch endpoint."})
		case len(in.Body) == 0 || in.Body[0] != '{':
			add(lineError{code: "invalid_value", line: lineNo, param: "body", message: "Invalid value for 'body': expected an object."})
		default:
			seen[*in.CustomID] = true
			items = append(items, bitem{customID: *in.CustomID, body: in.Body, h: bodyHash('o', in.Body)})
		}
	}
	switch {
	case len(items) > maxItems:
		errs = append([]lineError{{code: "too_many_tasks", message: "The batch input file is larger than the " + strconv.Itoa(maxItems) + " maximum number of requests."}}, errs...)
	case len(items) == 0 && len(errs) == 0:
		add(lineError{code: "empty_file", message: "The batch input file is empty."})
	}
	return items, errs
}

func (s *Server) oaBatch(w http.ResponseWriter, r *http.Request, cancel bool) {
	s.batchGetOrCancel(w, r, openAI{}, r.PathValue("id"), "batch", cancel,
		func(b *mbatch) *apiError {
			return errInvalid("", "Cannot cancel a batch with status '"+b.endState+"'.")
		},
		func(b *mbatch, now time.Time) []byte { return s.appendOABatch(nil, b, now, false) })
}

func (s *Server) handleOABatchGet(w http.ResponseWriter, r *http.Request)    { s.oaBatch(w, r, false) }
func (s *Server) handleOABatchCancel(w http.ResponseWriter, r *http.Request) { s.oaBatch(w, r, true) }

// oaView is an OpenAI batch's status and timestamps as seen at a moment.
type oaView struct {
	status string
	done   int // items processed

	// The timestamps; zero for null.
	inProgressAt, finalizingAt, completedAt, failedAt, expiredAt, cancelledAt time.Time
}

// oaViewOf returns m as seen at now (fresh: as just created, still
// validating). Requires bs.mu.
func (s *Server) oaViewOf(m *mbatch, now time.Time, fresh bool) oaView {
	var v oaView
	from, to := s.workSpan(m)
	v.done = s.processed(m, now)
	switch {
	case fresh:
		v.status, v.done = "validating", 0
	case m.ended:
		v.status, v.done = m.endState, m.done
		reached := func(t time.Time) time.Time {
			if !m.endAt.Before(t) {
				return t
			}
			return time.Time{}
		}
		if m.endState != "failed" {
			v.inProgressAt = reached(from)
		}
		switch m.endState {
		case "completed":
			v.finalizingAt, v.completedAt = reached(to), m.endAt
		case "failed":
			v.failedAt = m.endAt
		case "expired":
			v.expiredAt = m.endAt
		case "cancelled":
			v.cancelledAt = m.endAt
		}
	case !m.cancelAt.IsZero():
		v.status, v.done = "cancelling", m.cancelDone
		if !m.cancelAt.Before(from) {
			v.inProgressAt = from
		}
	case m.invalid != nil || now.Before(from):
		v.status = "validating"
	case now.Before(to):
		v.status, v.inProgressAt = "in_progress", from
	default:
		v.status, v.inProgressAt, v.finalizingAt = "finalizing", from, to
	}
	return v
}

// appendOAErrors appends the errors field: the validation errors of a
// failed batch, else null.
func appendOAErrors(b []byte, status string, invalid []lineError) []byte {
	if status == "failed" {
		b = append(b, `{"object":"list","data":[`...)
		for i, e := range invalid {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"code":`...)
			b = appendString(b, e.code)
			b = append(b, `,"line":`...)
			if e.line > 0 {
				b = appendInt(b, e.line)
			} else {
				b = append(b, "null"...)
			}
			b = append(b, `,"message":`...)
			b = appendString(b, e.message)
			b = append(b, `,"param":`...)
			b = appendNullString(b, e.param)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	} else {
		b = append(b, "null"...)
	}
	return b
}

// appendOABatch renders b as seen at now (fresh: as just created, still
// validating). Requires bs.mu.
func (s *Server) appendOABatch(b []byte, m *mbatch, now time.Time, fresh bool) []byte {
	v := s.oaViewOf(m, now, fresh)
	total := len(m.items)
	completed := m.okBefore[v.done]
	failed := v.done - completed

	b = append(b, `{"id":`...)
	b = appendString(b, m.id)
	b = append(b, `,"object":"batch","endpoint":`...)
	b = appendString(b, m.endpoint)
	b = append(b, `,"errors":`...)
	b = appendOAErrors(b, v.status, m.invalid)
	b = append(b, `,"input_file_id":`...)
	b = appendString(b, m.inputFile)
	b = append(b, `,"completion_window":"24h","status":`...)
	b = appendString(b, v.status)
	b = append(b, `,"output_file_id":`...)
	b = appendNullString(b, m.outFile)
	b = append(b, `,"error_file_id":`...)
	b = appendNullString(b, m.errFile)
	// The timestamps: Unix seconds, null until their moment came (a
	// fresh batch is not cancelling yet).
	cancelling := m.cancelAt
	if fresh {
		cancelling = time.Time{}
	}
	for _, at := range [...]struct {
		member string
		t      time.Time
	}{
		{`,"created_at":`, m.created}, {`,"in_progress_at":`, v.inProgressAt}, {`,"expires_at":`, m.created.Add(batchWindow)},
		{`,"finalizing_at":`, v.finalizingAt}, {`,"completed_at":`, v.completedAt}, {`,"failed_at":`, v.failedAt},
		{`,"expired_at":`, v.expiredAt}, {`,"cancelling_at":`, cancelling}, {`,"cancelled_at":`, v.cancelledAt},
	} {
		b = append(b, at.member...)
		b = appendUnixOrNull(b, at.t)
	}
	b = append(b, `,"request_counts":{"total":`...)
	b = appendInt(b, total)
	b = append(b, `,"completed":`...)
	b = appendInt(b, completed)
	b = append(b, `,"failed":`...)
	b = appendInt(b, failed)
	b = append(b, `},"metadata":`...)
	if m.metadata != nil {
		b = append(b, m.metadata...)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// writeOutputFiles writes an ended batch's output file (succeeded items)
// and error file (the others), each null when it would be empty. Requires
// bs.mu.
func (s *Server) writeOutputFiles(m *mbatch) {
	var out, errs []byte
	for _, i := range m.order {
		it, r := &m.items[i], &m.results[i]
		sum := sha256.Sum256([]byte(m.id + "\x00" + it.customID))
		line := append(make([]byte, 0, 256+len(r.body)), `{"id":"batch_req_`...)
		line = append(line, hex.EncodeToString(sum[:12])...)
		line = append(line, `","custom_id":`...)
		line = appendString(line, it.customID)
		line = append(line, `,"response":`...)
		switch r.kind {
		case itemSucceeded, itemErrored:
			line = append(line, `{"status_code":`...)
			line = appendInt(line, r.status)
			line = append(line, `,"request_id":`...)
			line = appendString(line, r.reqID)
			line = append(line, `,"body":`...)
			line = append(line, r.body...)
			line = append(line, `},"error":null}`...)
		case itemExpired:
			line = append(line, `null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}`...)
		case itemCanceled:
			line = append(line, `null,"error":{"code":"batch_cancelled","message":"This request was not executed because the batch was cancelled."}}`...)
		}
		line = append(line, '\n')
		if r.kind == itemSucceeded {
			out = append(out, line...)
		} else {
			errs = append(errs, line...)
		}
	}
	for _, f := range []struct {
		data []byte
		id   *string
		kind string
	}{{out, &m.outFile, "output"}, {errs, &m.errFile, "error"}} {
		if len(f.data) == 0 {
			continue
		}
		file := &mfile{filename: m.id + "_" + f.kind + ".jsonl", purpose: "batch_output", created: m.endAt, data: f.data}
		s.storeFile(file)
		*f.id = file.id
	}
}
