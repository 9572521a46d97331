package mock

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Gemini Batch API, requests inline or in a file (batch_gemini_file.go)
// (wire-formats §5.7): POST
// models/{model}:batchGenerateContent answers a long-running Operation;
// GET batches/{id} shows it, with its responses inline once done (in
// metadata.output, where the SDKs read them, and in response, where the
// REST samples do); POST batches/{id}:cancel answers {}; GET batches
// lists them. Items run on the shared timeline (batch.go). Unlike OpenAI's
// and Anthropic's, an expired or cancelled batch holds results only for
// the requests that ran, and a batch has no cancelling state.

// Gemini's batch limits: 20 MB of inline requests per call (the mock
// counts the requests, not the envelope around them, against it, as
// BatchMaxBytes); no count is documented, so the mock allows as many as
// OpenAI's file.
const (
	geminiBatchMaxItems = 50_000
	geminiBatchMaxBytes = 20 << 20
	geminiBatchWindow   = 48 * time.Hour
	// geminiEnvelope is room for a create call's envelope around its
	// requests, which BatchMaxBytes does not count.
	geminiEnvelope   = 64 << 10
	geminiBatchType  = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
	geminiOutputType = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
)

// handleGMBatchCreate serves POST models/{model}:batchGenerateContent.
func (s *Server) handleGMBatchCreate(w http.ResponseWriter, r *http.Request, model string) {
	d := gemini{model: model}
	reqID, ok := s.batchPrelude(w, r, d, true)
	if !ok {
		return
	}
	maxItems, maxBytes := s.batchLimits(geminiBatchMaxItems, geminiBatchMaxBytes)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes+geminiEnvelope))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			s.badRequest(w, d, reqID, gmPayloadTooLarge(maxBytes))
		}
		return // otherwise the client is gone
	}
	s.batches.mu.Lock()
	name, items, e := parseGMBatch(body, maxItems, maxBytes, func(f string) ([]byte, bool) { data, ok := s.batches.gmFiles[f]; return data, ok })
	s.batches.mu.Unlock()
	if e != nil {
		if e.status == 404 {
			s.bump(&s.stats.NotFound)
			s.fail(w, d, reqID, e)
		} else {
			s.badRequest(w, d, reqID, e)
		}
		return
	}
	now := s.now()
	s.batches.mu.Lock()
	b := &mbatch{d: d, created: now, items: items, name: name, fileInput: gjsonFileName(body) != ""}
	s.register(b, "batches/")
	body = s.appendGMOperation(nil, b, now)
	s.batches.mu.Unlock()
	s.holdAnswer(r)
	writeJSON(w, body)
}

func gmPayloadTooLarge(maxBytes int64) *apiError {
	return errBatchTooLarge("Request payload size exceeds the limit: " + strconv.FormatInt(maxBytes, 10) + " bytes.")
}

// gjsonFileName is the input file a create call names, "" for inline
// requests.
func gjsonFileName(body []byte) string {
	var in struct {
		Batch struct {
			InputConfig struct {
				FileName string `json:"fileName"`
			} `json:"inputConfig"`
		} `json:"batch"`
	}
	json.Unmarshal(body, &in)
	return in.Batch.InputConfig.FileName
}

// parseGMBatch reads a create call's body into its display name and items
// (inline, or from the input file it names, which file looks up), or the
// error Gemini answers, checked in the order Gemini checks them.
func parseGMBatch(body []byte, maxItems int, maxBytes int64, file func(name string) ([]byte, bool)) (string, []bitem, *apiError) {
	var in struct {
		Batch struct {
			DisplayName *string `json:"displayName"`
			InputConfig struct {
				FileName string `json:"fileName"`
				Requests struct {
					Requests json.RawMessage `json:"requests"`
				} `json:"requests"`
			} `json:"inputConfig"`
		} `json:"batch"`
	}
	var reqs []struct {
		Request  json.RawMessage `json:"request"`
		Metadata struct {
			Key string `json:"key"`
		} `json:"metadata"`
	}
	bad := func(msg string) (string, []bitem, *apiError) { return "", nil, errInvalid("", msg) }
	raw := &in.Batch.InputConfig.Requests.Requests
	err := json.Unmarshal(body, &in)
	if err == nil && *raw != nil {
		err = json.Unmarshal(*raw, &reqs)
	}
	switch {
	case err != nil:
		return bad("Invalid JSON payload received. " + err.Error())
	case int64(len(*raw))-2 > maxBytes: // the requests, without the brackets
		return "", nil, gmPayloadTooLarge(maxBytes)
	case in.Batch.DisplayName == nil || *in.Batch.DisplayName == "":
		return bad("* BatchGenerateContentRequest.batch.display_name: display_name is required")
	case in.Batch.InputConfig.FileName != "":
		data, ok := file(in.Batch.InputConfig.FileName)
		if !ok {
			return "", nil, errNoSuch("file", in.Batch.InputConfig.FileName)
		}
		items, e := gmFileItems(data, maxItems)
		return *in.Batch.DisplayName, items, e
	case len(reqs) == 0:
		return bad("* BatchGenerateContentRequest.batch.input_config: requests must not be empty")
	case len(reqs) > maxItems:
		return "", nil, errBatchTooLarge("a batch holds at most " + strconv.Itoa(maxItems) + " requests, got " + strconv.Itoa(len(reqs)))
	}
	items := make([]bitem, len(reqs))
	for i, rq := range reqs {
		if len(rq.Request) == 0 || rq.Request[0] != '{' {
			return bad("* BatchGenerateContentRequest.batch.input_config.requests.requests[" + strconv.Itoa(i) + "].request: must be an object")
		}
		items[i] = bitem{customID: rq.Metadata.Key, body: rq.Request, h: bodyHash('g', rq.Request)}
	}
	return *in.Batch.DisplayName, items, nil
}

func (s *Server) handleGMBatchGet(w http.ResponseWriter, r *http.Request) {
	s.gmBatch(w, r, "batches/"+r.PathValue("id"), false)
}

// handleGMBatchCancel routes POST batches/{id}:cancel.
func (s *Server) handleGMBatchCancel(w http.ResponseWriter, r *http.Request) {
	id, method, _ := strings.Cut(r.PathValue("call"), ":")
	if method != "cancel" {
		s.handleNotFound(w, r)
		return
	}
	s.gmBatch(w, r, "batches/"+id, true)
}

// gmBatch answers a batch, or with cancel cancels it and answers {}.
func (s *Server) gmBatch(w http.ResponseWriter, r *http.Request, id string, cancel bool) {
	s.batchGetOrCancel(w, r, gemini{}, id, "batch", cancel,
		func(*mbatch) *apiError {
			e := errInvalid("", "Batch "+id+" is in a terminal state and cannot be cancelled.")
			e.gmStatus = "FAILED_PRECONDITION"
			return e
		},
		func(b *mbatch, now time.Time) []byte {
			if cancel {
				return []byte(`{}`)
			}
			return s.appendGMOperation(nil, b, now)
		})
}

// handleGMBatchList answers GET batches: newest first, pageSize (default
// 50, at most 1000) at a time, the next page's pageToken the last id.
func (s *Server) handleGMBatchList(w http.ResponseWriter, r *http.Request) {
	d := gemini{}
	reqID, ok := s.batchPrelude(w, r, d, false)
	if !ok {
		return
	}
	size := 50
	if v := r.URL.Query().Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.badRequest(w, d, reqID, errInvalid("pageSize", "page_size must be positive, got '"+v+"'"))
			return
		}
		size = min(n, 1000)
	}
	now := s.now()
	s.batches.mu.Lock()
	var all []*mbatch
	for _, b := range s.batches.batchList {
		if b.d.tag() == 'g' {
			all = append(all, b)
		}
	}
	page, more := listPage(all, batchID, r.URL.Query().Get("pageToken"), size)
	b := []byte(`{"operations":[`)
	for i, m := range page {
		if i > 0 {
			b = append(b, ',')
		}
		s.settle(m, now)
		b = s.appendGMOperation(b, m, now)
	}
	s.batches.mu.Unlock()
	b = append(b, ']')
	if more {
		b = append(b, `,"nextPageToken":`...)
		b = appendString(b, page[len(page)-1].id)
	}
	writeJSON(w, append(b, '}'))
}

// gmState is b's BatchState at now. Requires bs.mu.
func (s *Server) gmState(b *mbatch, now time.Time) string {
	if b.ended {
		switch b.endState {
		case "completed":
			return "BATCH_STATE_SUCCEEDED"
		case "expired":
			return "BATCH_STATE_EXPIRED"
		case "cancelled":
			return "BATCH_STATE_CANCELLED"
		}
		return "BATCH_STATE_FAILED"
	}
	if from, _ := s.workSpan(b); now.Before(from) && b.cancelAt.IsZero() {
		return "BATCH_STATE_PENDING"
	}
	return "BATCH_STATE_RUNNING"
}

// gmUpdated is when b last changed state, as of now. Requires bs.mu.
func (s *Server) gmUpdated(b *mbatch, now time.Time) time.Time {
	switch from, _ := s.workSpan(b); {
	case b.ended:
		return b.endAt
	case !b.cancelAt.IsZero():
		return b.cancelAt
	case !now.Before(from):
		return from
	}
	return b.created
}

// appendGMOperation renders b as the Operation GET batches/{id} answers at
// now. Counts are int64 fields, rendered as strings. Requires bs.mu.
func (s *Server) appendGMOperation(b []byte, m *mbatch, now time.Time) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, m.id)
	b = append(b, `,"metadata":{"@type":"`+geminiBatchType+`","model":"models/`...)
	b = append(b, m.d.(gemini).model...)
	b = append(b, `","displayName":`...)
	b = appendString(b, m.name)
	b = append(b, `,"createTime":`...)
	b = appendString(b, m.created.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"updateTime":`...)
	b = appendString(b, s.gmUpdated(m, now).UTC().Format(time.RFC3339Nano))
	if m.ended {
		b = append(b, `,"endTime":`...)
		b = appendString(b, m.endAt.UTC().Format(time.RFC3339Nano))
	}
	b = append(b, `,"batchStats":{"requestCount":"`...)
	b = appendInt(b, len(m.items))
	if m.ended {
		b = append(b, `","successfulRequestCount":"`...)
		b = appendInt(b, m.counts[itemSucceeded])
		b = append(b, `","failedRequestCount":"`...)
		b = appendInt(b, m.counts[itemErrored])
		b = append(b, `","pendingRequestCount":"`...)
		b = appendInt(b, m.counts[itemExpired]+m.counts[itemCanceled])
	} else {
		b = append(b, `","pendingRequestCount":"`...)
		b = appendInt(b, len(m.items))
	}
	b = append(b, `"},"state":"`...)
	b = append(b, s.gmState(m, now)...)
	b = append(b, '"')
	if !m.ended {
		return append(b, `},"done":false}`...)
	}
	if m.endState == "failed" {
		return append(b, `},"done":true,"error":{"code":400,"message":"The batch failed.","status":"INVALID_ARGUMENT"}}`...)
	}
	out := appendGMOutput(nil, m)
	if m.fileInput {
		out = append(appendString([]byte(`{"responsesFile":`), m.outFile), '}')
	}
	b = append(b, `,"output":`...)
	b = append(b, out...)
	b = append(b, `},"done":true,"response":{"@type":"`+geminiOutputType+`",`...)
	b = append(b, out[1:]...) // the output's members, after its brace
	return append(b, '}')
}

// appendGMOutput renders the responses of the requests that ran, each
// with its key, in a shuffled order (clients join on the key).
func appendGMOutput(b []byte, m *mbatch) []byte {
	b = append(b, `{"inlinedResponses":{"inlinedResponses":[`...)
	n := 0
	for _, i := range m.order {
		res := &m.results[i]
		if res.kind != itemSucceeded && res.kind != itemErrored {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		if res.kind == itemSucceeded {
			b = append(b, `{"response":`...)
			b = append(b, res.body...)
		} else {
			// res.body is the error answer, {"error": Status}: its members.
			b = append(b, res.body[:len(res.body)-1]...)
		}
		b = append(b, `,"metadata":{"key":`...)
		b = appendString(b, m.items[i].customID)
		b = append(b, "}}"...)
	}
	return append(b, "]}}"...)
}
