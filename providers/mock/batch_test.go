package mock_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
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
	return do(srv, req)
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
	return do(srv, req)
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

// TestBatchCallDelayAndCompletions: with BatchCallDelay a create call is
// answered late, the batch already listed and the call in flight
// meanwhile; every answered item counts in BatchCompletions by custom_id.
func TestBatchCallDelayAndCompletions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mock.New(mock.Config{BatchCallDelay: 150 * time.Millisecond})
		body, _ := anInput(3, "d")
		call := func(method, path, body string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
			return rec
		}
		answered := make(chan int, 1)
		go func() { answered <- call("POST", "/v1/messages/batches", body).Code }()
		synctest.Wait()
		if st := m.Stats(); st.BatchesCreated != 1 || m.BatchCallsInFlight() != 1 || len(answered) != 0 {
			t.Fatalf("created %d, %d in flight, answered %v", st.BatchesCreated, m.BatchCallsInFlight(), len(answered) != 0)
		}
		list := decode(t, call("GET", "/v1/messages/batches", "").Body.Bytes())
		if len(list["data"].([]any)) != 1 || list["has_more"] != false {
			t.Errorf("list %v", list)
		}
		time.Sleep(150 * time.Millisecond)
		if code := <-answered; code != 200 {
			t.Fatalf("create answered %d", code)
		}
		go call("POST", "/v1/messages/batches", body)
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		call("GET", "/v1/messages/batches?limit=1000", "") // settles both
		if c := m.BatchCompletions(); len(c) != 3 || c["d000"] != 2 || m.BatchCallsInFlight() != 0 {
			t.Errorf("completions %v, %d in flight", c, m.BatchCallsInFlight())
		}
		for _, path := range []string{"/v1/messages/batches?limit=0", "/v1/batches?limit=101"} {
			if code := call("GET", path, "").Code; code != 400 {
				t.Errorf("%s: %d", path, code)
			}
		}
	})
}
