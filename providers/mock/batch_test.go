package mock_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// get sends a GET to path.
func get(t *testing.T, srv *httptest.Server, path string, headers ...string) result {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// upload posts data as a multipart batch input file.
func upload(t *testing.T, srv *httptest.Server, filename, purpose string, data []byte) result {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("purpose", purpose)
	fw, _ := mw.CreateFormFile("file", filename)
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/files", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := srv.Client().Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// oaInput builds an OpenAI batch input file of n requests and their bodies by custom_id.
func oaInput(n int) ([]byte, map[string]string) {
	var b bytes.Buffer
	bodies := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("row-%03d", i)
		body := oaBody(fmt.Sprintf("Name prime number %d.", i), `,"max_completion_tokens":30`)
		bodies[id] = body
		fmt.Fprintf(&b, `{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":%s}`+"\n", id, body)
	}
	return b.Bytes(), bodies
}

// oaCreate uploads data and creates a batch on it, returning the batch.
func oaCreate(t *testing.T, srv *httptest.Server, data []byte) map[string]any {
	t.Helper()
	r := upload(t, srv, "in.jsonl", "batch", data)
	wantStatus(t, r, 200)
	f := decode(t, r.body)
	if f["object"] != "file" || f["purpose"] != "batch" || f["bytes"] != float64(len(data)) {
		t.Fatalf("file object %s", r.body)
	}
	r = post(t, srv, "/v1/batches", fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"job":"t"}}`, f["id"]))
	wantStatus(t, r, 200)
	return decode(t, r.body)
}

func oaPoll(t *testing.T, srv *httptest.Server, id string) map[string]any {
	t.Helper()
	r := get(t, srv, "/v1/batches/"+id)
	wantStatus(t, r, 200)
	return decode(t, r.body)
}

// jsonl decodes a JSONL body into objects by custom_id.
func jsonl(t *testing.T, data []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		m := decode(t, line)
		id, _ := m["custom_id"].(string)
		if _, dup := out[id]; dup {
			t.Fatalf("custom_id %q twice", id)
		}
		out[id] = m
	}
	return out
}

func counts(m map[string]any) string {
	b, _ := json.Marshal(m["request_counts"])
	return string(b)
}

func TestOpenAIBatchLifecycle(t *testing.T) {
	clk := newClock()
	srv, m := start(t, mock.Config{Now: clk.Now, BatchDelay: 100 * time.Second})
	data, bodies := oaInput(10)
	b := oaCreate(t, srv, data)
	id := b["id"].(string)
	if b["object"] != "batch" || b["status"] != "validating" || b["output_file_id"] != nil || b["metadata"].(map[string]any)["job"] != "t" ||
		!strings.HasPrefix(id, "batch_") || counts(b) != `{"completed":0,"failed":0,"total":10}` {
		t.Fatalf("created batch %v", b)
	}
	steps := []struct {
		at     time.Duration
		status string
		counts string
	}{
		{5 * time.Second, "validating", `{"completed":0,"failed":0,"total":10}`},
		{10 * time.Second, "in_progress", `{"completed":0,"failed":0,"total":10}`},
		{50 * time.Second, "in_progress", `{"completed":5,"failed":0,"total":10}`},
		{95 * time.Second, "finalizing", `{"completed":10,"failed":0,"total":10}`},
		{100 * time.Second, "completed", `{"completed":10,"failed":0,"total":10}`},
	}
	var elapsed time.Duration
	for _, s := range steps {
		clk.Advance(s.at - elapsed)
		elapsed = s.at
		b = oaPoll(t, srv, id)
		if b["status"] != s.status || counts(b) != s.counts {
			t.Fatalf("at %v: status %v counts %s, want %s %s", s.at, b["status"], counts(b), s.status, s.counts)
		}
	}
	if b["completed_at"] == nil || b["in_progress_at"] == nil || b["finalizing_at"] == nil || b["error_file_id"] != nil {
		t.Errorf("completed batch %v", b)
	}
	r := get(t, srv, "/v1/files/"+b["output_file_id"].(string)+"/content")
	wantStatus(t, r, 200)
	lines := jsonl(t, r.body)
	if len(lines) != 10 {
		t.Fatalf("%d output lines", len(lines))
	}
	// Each batch body is byte for byte the body the synchronous endpoint returns.
	for cid, body := range bodies {
		l := lines[cid]
		if path(l, "response", "status_code") != float64(200) || l["error"] != nil || !strings.HasPrefix(l["id"].(string), "batch_req_") {
			t.Errorf("%s: line %v", cid, l)
		}
		sync := post(t, srv, "/v1/chat/completions", body)
		wantStatus(t, sync, 200)
		if got := rawPath(t, r.body, cid, "response", "body"); !bytes.Equal(got, sync.body) {
			t.Errorf("%s: batch body %s\nsync body %s", cid, got, sync.body)
		}
	}
	st := m.Stats()
	if st.BatchesCreated != 1 || st.FilesUploaded != 1 || st.BatchItems != 10 || st.BatchSucceeded != 10 || st.Completed != 20 || st.Duplicates != 10 {
		t.Errorf("stats %+v", st)
	}
	// Polling an ended batch again changes nothing.
	clk.Advance(time.Hour)
	if again := oaPoll(t, srv, id); again["output_file_id"] != b["output_file_id"] || m.Stats().BatchSucceeded != 10 {
		t.Errorf("second look %v", again)
	}
	r = post(t, srv, "/v1/batches/"+id+"/cancel", "")
	wantStatus(t, r, 400)
}

// rawPath returns the raw JSON at keys inside the JSONL line of custom_id cid.
func rawPath(t *testing.T, data []byte, cid string, keys ...string) []byte {
	t.Helper()
	for _, line := range bytes.Split(data, []byte("\n")) {
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) != nil || string(m["custom_id"]) != `"`+cid+`"` {
			continue
		}
		raw := json.RawMessage(line)
		for _, k := range keys {
			var mm map[string]json.RawMessage
			if err := json.Unmarshal(raw, &mm); err != nil {
				t.Fatalf("%s: %v", cid, err)
			}
			raw = mm[k]
		}
		return raw
	}
	t.Fatalf("no line for %s", cid)
	return nil
}

func TestOpenAIBatchOutputNotInInputOrder(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	data, _ := oaInput(20)
	b := oaCreate(t, srv, data)
	b = oaPoll(t, srv, b["id"].(string))
	r := get(t, srv, "/v1/files/"+b["output_file_id"].(string)+"/content")
	if bytes.Index(r.body, []byte("row-000")) == 0 && bytes.Index(r.body, []byte("row-001")) < bytes.Index(r.body, []byte("row-002")) &&
		bytes.Index(r.body, []byte("row-002")) < bytes.Index(r.body, []byte("row-003")) {
		t.Errorf("output in input order; clients would not notice they must join on custom_id")
	}
}

func TestOpenAIBatchFailuresExpiryCancel(t *testing.T) {
	t.Run("fail rate and invalid bodies", func(t *testing.T) {
		srv, m := start(t, mock.Config{BatchFailRate: 0.3, Seed: 5})
		data, _ := oaInput(40)
		data = append(data, `{"custom_id":"bad","method":"POST","url":"/v1/chat/completions","body":{"model":"x","messages":[]}}`+"\n"...)
		b := oaPoll(t, srv, oaCreate(t, srv, data)["id"].(string))
		errs := jsonl(t, get(t, srv, "/v1/files/"+b["error_file_id"].(string)+"/content").body)
		outs := jsonl(t, get(t, srv, "/v1/files/"+b["output_file_id"].(string)+"/content").body)
		if len(errs)+len(outs) != 41 || len(errs) < 5 || path(errs["bad"], "response", "status_code") != float64(400) ||
			path(errs["bad"], "response", "body", "error", "type") != "invalid_request_error" {
			t.Fatalf("%d errors, %d outputs; bad: %v", len(errs), len(outs), errs["bad"])
		}
		for cid, l := range errs {
			if cid != "bad" && (path(l, "response", "status_code") != float64(500) || path(l, "response", "body", "error", "type") != "server_error") {
				t.Errorf("%s: %v", cid, l)
			}
		}
		if counts(b) != fmt.Sprintf(`{"completed":%d,"failed":%d,"total":41}`, len(outs), len(errs)) {
			t.Errorf("counts %s", counts(b))
		}
		// The same items fail on every server with the same seed.
		srv2, _ := start(t, mock.Config{BatchFailRate: 0.3, Seed: 5})
		b2 := oaPoll(t, srv2, oaCreate(t, srv2, data)["id"].(string))
		if counts(b2) != counts(b) {
			t.Errorf("not deterministic: %s vs %s", counts(b2), counts(b))
		}
		if st := m.Stats(); st.BatchErrored != int64(len(errs)) || st.BatchSucceeded != int64(len(outs)) {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("expire", func(t *testing.T) {
		clk := newClock()
		srv, m := start(t, mock.Config{Now: clk.Now, BatchDelay: time.Minute, BatchExpire: true})
		data, _ := oaInput(9)
		id := oaCreate(t, srv, data)["id"].(string)
		clk.Advance(time.Minute)
		b := oaPoll(t, srv, id)
		if b["status"] != "expired" || b["expired_at"] == nil || counts(b) != `{"completed":4,"failed":0,"total":9}` {
			t.Fatalf("batch %v", b)
		}
		outs := jsonl(t, get(t, srv, "/v1/files/"+b["output_file_id"].(string)+"/content").body)
		errs := jsonl(t, get(t, srv, "/v1/files/"+b["error_file_id"].(string)+"/content").body)
		for i := range 9 {
			cid := fmt.Sprintf("row-%03d", i)
			if i < 4 && outs[cid] == nil || i >= 4 && path(errs[cid], "error", "code") != "batch_expired" {
				t.Errorf("%s: out %v err %v", cid, outs[cid], errs[cid])
			}
		}
		if st := m.Stats(); st.BatchExpired != 5 || st.BatchSucceeded != 4 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("window", func(t *testing.T) {
		clk := newClock()
		srv, _ := start(t, mock.Config{Now: clk.Now, BatchDelay: 100 * time.Hour})
		data, _ := oaInput(10)
		id := oaCreate(t, srv, data)["id"].(string)
		clk.Advance(24 * time.Hour)
		if b := oaPoll(t, srv, id); b["status"] != "expired" || counts(b) != `{"completed":1,"failed":0,"total":10}` {
			t.Fatalf("batch %v", b)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		clk := newClock()
		srv, m := start(t, mock.Config{Now: clk.Now, BatchDelay: 100 * time.Second})
		data, _ := oaInput(10)
		id := oaCreate(t, srv, data)["id"].(string)
		clk.Advance(30 * time.Second) // 2 of 10 done
		r := post(t, srv, "/v1/batches/"+id+"/cancel", "")
		wantStatus(t, r, 200)
		if b := decode(t, r.body); b["status"] != "cancelling" || b["cancelling_at"] == nil {
			t.Fatalf("cancel answer %s", r.body)
		}
		clk.Advance(5 * time.Second)
		if b := oaPoll(t, srv, id); b["status"] != "cancelling" {
			t.Fatalf("status %v", b["status"])
		}
		clk.Advance(5 * time.Second)
		b := oaPoll(t, srv, id)
		if b["status"] != "cancelled" || b["cancelled_at"] == nil || counts(b) != `{"completed":2,"failed":0,"total":10}` {
			t.Fatalf("batch %v", b)
		}
		errs := jsonl(t, get(t, srv, "/v1/files/"+b["error_file_id"].(string)+"/content").body)
		if len(errs) != 8 || path(errs["row-009"], "error", "code") != "batch_cancelled" {
			t.Errorf("errors %v", errs)
		}
		if st := m.Stats(); st.BatchesCanceled != 1 || st.BatchCanceledItems != 8 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestOpenAIBatchValidation(t *testing.T) {
	srv, _ := start(t, mock.Config{BatchMaxItems: 5, BatchMaxBytes: 4000})
	tests := map[string]struct {
		data string
		code string
	}{
		"too many":  {data: func() string { d, _ := oaInput(6); return string(d) }(), code: "too_many_tasks"},
		"dup":       {data: `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}` + "\n" + `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}`, code: "duplicate_custom_id"},
		"bad json":  {data: "{nope\n", code: "invalid_json_line"},
		"url":       {data: `{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{}}`, code: "url_mismatch"},
		"empty":     {data: "\n", code: "empty_file"},
		"no cid":    {data: `{"method":"POST","url":"/v1/chat/completions","body":{}}`, code: "missing_required_parameter"},
		"body type": {data: `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":"x"}`, code: "invalid_value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := oaCreate(t, srv, []byte(tc.data))
			b = oaPoll(t, srv, b["id"].(string))
			if b["status"] != "failed" || b["failed_at"] == nil || path(b, "errors", "data", 0, "code") != tc.code {
				t.Fatalf("batch %v", b)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		r := upload(t, srv, "in.jsonl", "batch", bytes.Repeat([]byte("x"), 4001))
		wantStatus(t, r, 413)
	})
	t.Run("upload checks", func(t *testing.T) {
		wantStatus(t, upload(t, srv, "in.txt", "batch", []byte("{}")), 400)
		wantStatus(t, upload(t, srv, "in.jsonl", "fine-tune", []byte("{}")), 400)
		wantStatus(t, post(t, srv, "/v1/batches", `{"input_file_id":"file-none","endpoint":"/v1/chat/completions","completion_window":"24h"}`), 404)
		wantStatus(t, post(t, srv, "/v1/batches", `{"input_file_id":"file-none","endpoint":"/v1/chat/completions","completion_window":"1h"}`), 400)
		wantStatus(t, get(t, srv, "/v1/batches/batch_none"), 404)
		wantStatus(t, get(t, srv, "/v1/files/file-none/content"), 404)
	})
}

func TestBatchAuthAndOutage(t *testing.T) {
	srv, _ := start(t, mock.Config{APIKey: "sk-right-key-0000000000"})
	r := post(t, srv, "/v1/messages/batches", `{"requests":[]}`, "x-api-key", "sk-wrong-key-0000000000")
	wantStatus(t, r, 401)
	if path(decode(t, r.body), "error", "type") != "authentication_error" {
		t.Errorf("body %s", r.body)
	}
	wantStatus(t, get(t, srv, "/v1/batches/x", "Authorization", "Bearer nope-nope-nope-nope"), 401)
	srv2, _ := start(t, mock.Config{Outage: true})
	wantStatus(t, get(t, srv2, "/v1/messages/batches/x"), 500)
}

// anInput builds an Anthropic batch body of n requests and their params by custom_id.
func anInput(n int, prefix string) (string, map[string]string) {
	var reqs []string
	params := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("%s%03d", prefix, i)
		p := anBody(fmt.Sprintf("Name colour number %d.", i), "")
		params[id] = p
		reqs = append(reqs, fmt.Sprintf(`{"custom_id":%q,"params":%s}`, id, p))
	}
	return `{"requests":[` + strings.Join(reqs, ",") + `]}`, params
}

func TestAnthropicBatchLifecycle(t *testing.T) {
	clk := newClock()
	srv, m := start(t, mock.Config{Now: clk.Now, BatchDelay: time.Minute, BatchFailRate: 0.25, Seed: 3})
	body, params := anInput(12, "row-")
	r := post(t, srv, "/v1/messages/batches", body, "anthropic-version", "2023-06-01")
	wantStatus(t, r, 200)
	b := decode(t, r.body)
	id := b["id"].(string)
	if b["type"] != "message_batch" || b["processing_status"] != "in_progress" || b["results_url"] != nil ||
		counts(b) != `{"canceled":0,"errored":0,"expired":0,"processing":12,"succeeded":0}` || b["created_at"] != "2026-03-01T12:00:00.000000Z" || b["expires_at"] != "2026-03-02T12:00:00.000000Z" {
		t.Fatalf("created %s", r.body)
	}
	wantStatus(t, get(t, srv, "/v1/messages/batches/"+id+"/results"), 400)
	clk.Advance(59 * time.Second)
	b = decode(t, get(t, srv, "/v1/messages/batches/"+id).body)
	if b["processing_status"] != "in_progress" || counts(b) != `{"canceled":0,"errored":0,"expired":0,"processing":12,"succeeded":0}` {
		t.Fatalf("terminal counts moved before the end: %v", b)
	}
	clk.Advance(time.Second)
	b = decode(t, get(t, srv, "/v1/messages/batches/"+id).body)
	if b["processing_status"] != "ended" || b["ended_at"] != "2026-03-01T12:01:00.000000Z" || b["results_url"] != srv.URL+"/v1/messages/batches/"+id+"/results" {
		t.Fatalf("ended %v", b)
	}
	r = get(t, srv, strings.TrimPrefix(b["results_url"].(string), srv.URL))
	wantStatus(t, r, 200)
	res := jsonl(t, r.body)
	succeeded, errored := 0, 0
	for cid, p := range params {
		l := res[cid]
		switch path(l, "result", "type") {
		case "succeeded":
			succeeded++
			sync := post(t, srv, "/v1/messages", p)
			if got := rawPath(t, r.body, cid, "result", "message"); !bytes.Equal(got, sync.body) {
				t.Errorf("%s: batch %s\nsync %s", cid, got, sync.body)
			}
		case "errored":
			errored++
			if path(l, "result", "error", "type") != "error" || path(l, "result", "error", "error", "type") != "api_error" ||
				!strings.HasPrefix(path(l, "result", "error", "request_id").(string), "req_") {
				t.Errorf("%s: %v", cid, l)
			}
		default:
			t.Errorf("%s: %v", cid, l)
		}
	}
	if errored == 0 || counts(b) != fmt.Sprintf(`{"canceled":0,"errored":%d,"expired":0,"processing":0,"succeeded":%d}`, errored, succeeded) {
		t.Errorf("counts %s, %d errored", counts(b), errored)
	}
	if st := m.Stats(); st.BatchesCreated != 1 || st.BatchSucceeded != int64(succeeded) || st.BatchErrored != int64(errored) {
		t.Errorf("stats %+v", st)
	}
}

func TestAnthropicBatchCancelAndExpire(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		clk := newClock()
		srv, _ := start(t, mock.Config{Now: clk.Now, BatchDelay: 100 * time.Second})
		body, _ := anInput(10, "c")
		id := decode(t, post(t, srv, "/v1/messages/batches", body).body)["id"].(string)
		clk.Advance(35 * time.Second)
		r := post(t, srv, "/v1/messages/batches/"+id+"/cancel", "")
		wantStatus(t, r, 200)
		if b := decode(t, r.body); b["processing_status"] != "canceling" || b["cancel_initiated_at"] != "2026-03-01T12:00:35.000000Z" {
			t.Fatalf("cancel %s", r.body)
		}
		clk.Advance(10 * time.Second)
		b := decode(t, get(t, srv, "/v1/messages/batches/"+id).body)
		if b["processing_status"] != "ended" || counts(b) != `{"canceled":7,"errored":0,"expired":0,"processing":0,"succeeded":3}` {
			t.Fatalf("ended %v", b)
		}
		res := jsonl(t, get(t, srv, "/v1/messages/batches/"+id+"/results").body)
		if path(res["c000"], "result", "type") != "succeeded" || path(res["c009"], "result", "type") != "canceled" {
			t.Errorf("results %v", res)
		}
		wantStatus(t, post(t, srv, "/v1/messages/batches/"+id+"/cancel", ""), 400)
	})
	t.Run("expire", func(t *testing.T) {
		srv, _ := start(t, mock.Config{BatchExpire: true})
		body, _ := anInput(4, "e")
		id := decode(t, post(t, srv, "/v1/messages/batches", body).body)["id"].(string)
		b := decode(t, get(t, srv, "/v1/messages/batches/"+id).body)
		if counts(b) != `{"canceled":0,"errored":0,"expired":2,"processing":0,"succeeded":2}` {
			t.Fatalf("batch %v", b)
		}
	})
}

func TestAnthropicBatchLimits(t *testing.T) {
	srv, m := start(t, mock.Config{BatchMaxItems: 3, BatchMaxBytes: 3000})
	body, _ := anInput(4, "x")
	wantStatus(t, post(t, srv, "/v1/messages/batches", body), 413)
	body, _ = anInput(3, "x")
	wantStatus(t, post(t, srv, "/v1/messages/batches", body), 200)
	big := `{"requests":[{"custom_id":"a","params":` + anBody(strings.Repeat("y", 3000), "") + `}]}`
	r := post(t, srv, "/v1/messages/batches", big)
	wantStatus(t, r, 413)
	if path(decode(t, r.body), "error", "type") != "request_too_large" {
		t.Errorf("413 body %s", r.body)
	}
	p := anBody("hi", "")
	for name, reqs := range map[string]string{
		"bad id":  `[{"custom_id":"a b","params":` + p + `}]`,
		"long id": `[{"custom_id":"` + strings.Repeat("a", 65) + `","params":` + p + `}]`,
		"dup":     `[{"custom_id":"a","params":` + p + `},{"custom_id":"a","params":` + p + `}]`,
		"empty":   `[]`,
		"params":  `[{"custom_id":"a","params":3}]`,
	} {
		t.Run(name, func(t *testing.T) {
			r := post(t, srv, "/v1/messages/batches", `{"requests":`+reqs+`}`)
			wantStatus(t, r, 400)
			if path(decode(t, r.body), "error", "type") != "invalid_request_error" {
				t.Errorf("body %s", r.body)
			}
		})
	}
	if st := m.Stats(); st.BatchesCreated != 1 {
		t.Errorf("stats %+v", st)
	}
	wantStatus(t, post(t, srv, "/v1/messages/batches", `{"requests":[{"custom_id":"`+strings.Repeat("a", 64)+`","params":`+p+`}]}`), 200)
}
