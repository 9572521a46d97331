package mock

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// The Anthropic Message Batches API: create a batch with its requests
// inline, poll it, stream its results from results_url once it has ended.

// customIDPattern is what Anthropic accepts as a batch custom_id.
// Compiled on first use: its {1,64} makes it the costliest of the
// package's start-up, and only the batch route checks ids.
var customIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// anthropicTime is the RFC 3339 form of MessageBatch timestamps.
const anthropicTime = "2006-01-02T15:04:05.000000Z07:00"

func (s *Server) handleANBatchCreate(w http.ResponseWriter, r *http.Request) {
	d := anthropic{}
	reqID, ok := s.batchPrelude(w, r, d, true)
	if !ok {
		return
	}
	maxItems, maxBytes := s.batchLimits(anthropicBatchMaxItems, anthropicBatchMaxBytes)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			s.badRequest(w, d, reqID, errBatchTooLarge("Request exceeds the maximum batch size of "+strconv.FormatInt(maxBytes, 10)+" bytes."))
		}
		return
	}
	var in struct {
		Requests []struct {
			CustomID *string         `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.badRequest(w, d, reqID, errInvalid("", "invalid request body: "+err.Error()))
		return
	}
	if len(in.Requests) > maxItems {
		s.badRequest(w, d, reqID, errBatchTooLarge("requests: a batch holds at most "+strconv.Itoa(maxItems)+" requests, got "+strconv.Itoa(len(in.Requests))))
		return
	}
	if len(in.Requests) == 0 {
		s.badRequest(w, d, reqID, errInvalid("requests", "requests: List should have at least 1 item after validation, not 0"))
		return
	}
	items := make([]bitem, 0, len(in.Requests))
	seen := make(map[string]bool, len(in.Requests))
	for i, rq := range in.Requests {
		at := "requests." + strconv.Itoa(i)
		var aerr *apiError
		switch {
		case rq.CustomID == nil:
			aerr = errInvalid("", at+".custom_id: Field required")
		case !customIDPattern().MatchString(*rq.CustomID):
			aerr = errInvalid("", at+".custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'")
		case seen[*rq.CustomID]:
			aerr = errInvalid("", "Duplicate custom_id: "+*rq.CustomID+". custom_id values must be unique within a batch.")
		case len(rq.Params) == 0 || rq.Params[0] != '{':
			aerr = errInvalid("", at+".params: Input should be a valid dictionary")
		}
		if aerr != nil {
			s.badRequest(w, d, reqID, aerr)
			return
		}
		seen[*rq.CustomID] = true
		items = append(items, bitem{customID: *rq.CustomID, body: rq.Params, h: bodyHash('a', rq.Params)})
	}
	now := s.now()
	s.batches.mu.Lock()
	b := &mbatch{d: d, created: now, items: items}
	s.register(b, "msgbatch_01mock")
	body = s.appendANBatch(nil, b, now, resultsBase(r))
	s.batches.mu.Unlock()
	s.holdAnswer(r)
	writeJSON(w, body)
}

// handleANBatchList answers GET /v1/messages/batches: the batches, newest
// first, paged by limit (default 20, at most 1000) and after_id.
func (s *Server) handleANBatchList(w http.ResponseWriter, r *http.Request) {
	base := resultsBase(r)
	s.listBatches(w, r, anthropic{}, 1000, "after_id", `{"data":[`, func(b []byte, m *mbatch, now time.Time) []byte {
		return s.appendANBatch(b, m, now, base)
	})
}

// resultsBase is the scheme and host results_url points at: the server the
// client reached.
func resultsBase(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

func (s *Server) anBatch(w http.ResponseWriter, r *http.Request, cancel bool) {
	id := r.PathValue("id")
	s.batchGetOrCancel(w, r, anthropic{}, id, "message batch", cancel,
		func(*mbatch) *apiError {
			return errInvalid("", "Batch "+id+" has already ended and cannot be canceled.")
		},
		func(b *mbatch, now time.Time) []byte { return s.appendANBatch(nil, b, now, resultsBase(r)) })
}

func (s *Server) handleANBatchGet(w http.ResponseWriter, r *http.Request)    { s.anBatch(w, r, false) }
func (s *Server) handleANBatchCancel(w http.ResponseWriter, r *http.Request) { s.anBatch(w, r, true) }

func (s *Server) handleANBatchResults(w http.ResponseWriter, r *http.Request) {
	d, id := anthropic{}, r.PathValue("id")
	b, reqID, _, ok := s.lockBatch(w, r, d, id, "message batch")
	if !ok {
		return
	}
	if !b.ended {
		s.batches.mu.Unlock()
		s.badRequest(w, d, reqID, errInvalid("", "Batch "+id+" is still processing; its results are available once processing_status is ended."))
		return
	}
	s.batches.mu.Unlock() // an ended batch's results never change
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	line := make([]byte, 0, 1024)
	for _, i := range b.order {
		it, res := &b.items[i], &b.results[i]
		line = append(line[:0], `{"custom_id":`...)
		line = appendString(line, it.customID)
		line = append(line, `,"result":{"type":`...)
		switch res.kind {
		case itemSucceeded:
			line = append(line, `"succeeded","message":`...)
			line = append(line, res.body...)
		case itemErrored:
			line = append(line, `"errored","error":`...)
			line = append(line, res.body...)
		case itemExpired:
			line = append(line, `"expired"`...)
		case itemCanceled:
			line = append(line, `"canceled"`...)
		}
		line = append(line, "}}\n"...)
		if _, err := w.Write(line); err != nil {
			return
		}
	}
}

// appendANBatch renders b as seen at now. Requires bs.mu.
func (s *Server) appendANBatch(b []byte, m *mbatch, now time.Time, base string) []byte {
	status := "in_progress"
	switch {
	case m.ended:
		status = "ended"
	case !m.cancelAt.IsZero():
		status = "canceling"
	}
	b = append(b, `{"id":`...)
	b = appendString(b, m.id)
	b = append(b, `,"type":"message_batch","processing_status":`...)
	b = appendString(b, status)
	b = append(b, `,"request_counts":{"processing":`...)
	if m.ended {
		b = append(b, `0,"succeeded":`...)
		b = appendInt(b, m.counts[itemSucceeded])
		b = append(b, `,"errored":`...)
		b = appendInt(b, m.counts[itemErrored])
		b = append(b, `,"canceled":`...)
		b = appendInt(b, m.counts[itemCanceled])
		b = append(b, `,"expired":`...)
		b = appendInt(b, m.counts[itemExpired])
	} else {
		// Requests move out of processing only when the whole batch ends.
		b = appendInt(b, len(m.items))
		b = append(b, `,"succeeded":0,"errored":0,"canceled":0,"expired":0`...)
	}
	b = append(b, `},"ended_at":`...)
	b = appendTimeOrNull(b, m.endAt)
	b = append(b, `,"created_at":`...)
	b = appendTimeOrNull(b, m.created)
	b = append(b, `,"expires_at":`...)
	b = appendTimeOrNull(b, m.created.Add(batchWindow))
	b = append(b, `,"archived_at":null,"cancel_initiated_at":`...)
	b = appendTimeOrNull(b, m.cancelAt)
	b = append(b, `,"results_url":`...)
	if m.ended {
		b = appendString(b, base+"/v1/messages/batches/"+m.id+"/results")
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

func appendTimeOrNull(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	return appendString(b, t.UTC().Format(anthropicTime))
}
