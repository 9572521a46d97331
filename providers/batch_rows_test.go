package providers_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/anthropic"
	"github.com/llmrun/llmrun/providers/azure"
	"github.com/llmrun/llmrun/providers/openai"
)

// A batchRow is one batch API as the batch suite (batch_suite_test.go)
// drives it: its client, its request bodies and answers, the statuses it
// reports, and how its wire looks at the mock (raw create, poll and
// results, and the dialect's own fields). A new batch API (Azure's,
// Gemini's) gets every test of the suite by adding a row here and its
// dialect to providers/mock.
type batchRow struct {
	name string
	new  func(providers.Config) providers.BatchClient
	// basePath turns the mock's root into the client's BaseURL; syncPath
	// is the synchronous endpoint that answers the same bodies.
	basePath, syncPath string
	// body is a request body asking prompt, with max tokens 20, of model.
	body  func(prompt string) string
	model string
	// textPath finds the answer's text in a success body.
	textPath string
	// bad is a body the provider answers with a 400 whose message holds
	// badMsg; serverErr is the error type of an injected 500.
	bad, badMsg, serverErr string
	idPrefix               string
	maxItems               int
	labels                 bool
	// uploads says the client uploads its requests as a file (OpenAI's
	// always do, and they are labelled; Gemini's beyond the inline limit).
	uploads bool
	// validIDs says which custom_ids ValidID accepts; oddID is a valid
	// one that is awkward to encode, for the exact-size test.
	validIDs map[string]bool
	oddID    string
	// envelope is what the submitted body holds besides its items.
	envelope int64
	// tooLarge and authCode are the Type of a 413 and the Code or Type of
	// a 401.
	tooLarge, authCode string

	// Statuses as BatchJob.Status reports them.
	created, running, cancelling, cancelled, expired, completed string
	// progress: Succeeded and Failed count as the batch runs (OpenAI), not
	// only once it ended (Anthropic).
	progress bool
	// resultsEarly: Results of a running batch fails (rather than finding
	// no result files yet).
	resultsEarly bool
	// noErrorIDs: errored results carry no request id (Gemini's Status).
	noErrorIDs bool
	// omitsUnrun: an expired or cancelled batch has no results for the
	// requests that never ran (Gemini); the runner reports those.
	omitsUnrun bool
	// window is how long a batch may run before it expires (0: 24 h) and
	// windowDone how many of 10 items the mock has done by then with a
	// 100 h BatchDelay.
	window     time.Duration
	windowDone int

	// The wire at the mock.
	wire batchWire
}

// batchWire is how a batch API looks on the wire, for the mock's side of
// the suite.
type batchWire struct {
	// create creates a batch of reqs (custom_id → body) over raw HTTP and
	// returns the created batch object.
	create func(t *testing.T, srv *httptest.Server, reqs []batchReq) map[string]any
	// get is the batch object's path; status names its status field, or
	// stateOf reads it in the client's words (where they differ);
	// countsAt is the path of its request counts (nil: request_counts).
	get      func(id string) string
	status   string
	stateOf  func(b map[string]any) any
	countsAt []any
	// cancel asks to cancel a batch and returns the status and the batch
	// as then seen; nil POSTs get(id)+"/cancel", answered with the batch.
	cancel func(t *testing.T, srv *httptest.Server, id string) (int, map[string]any)
	// inline: the results come with the batch object, from no endpoint
	// of their own.
	inline bool
	// results reads an ended batch's result lines (all of them).
	results func(t *testing.T, srv *httptest.Server, b map[string]any) []byte
	// bodyAt is where a result line holds the answer body.
	bodyAt []string
	// counts renders request_counts as the mock must show them: done
	// items ok and failed of total, and ended/canceled/expired tallies.
	counts func(c batchCounts) string
	// createdFields, endedFields check the dialect's own fields of a batch
	// just created and just ended (as completed, expired or cancelled, at
	// end by the suite's clock).
	createdFields func(t *testing.T, b map[string]any)
	endedFields   func(t *testing.T, srv *httptest.Server, b map[string]any, state string, end time.Time)
	// cancelFields checks a batch just asked to cancel at at.
	cancelFields func(t *testing.T, b map[string]any, at time.Time)
	// failure reads an errored result line: its status and error type;
	// check asserts the dialect's own details of any result line.
	failure func(line map[string]any) (status float64, typ any)
	check   func(t *testing.T, line map[string]any)
	// outcome reads a result line: succeeded, errored, expired, canceled.
	outcome func(line map[string]any) string
	// stepAt are the moments of the lifecycle test (D = 100 s) with the
	// status and counts the mock shows then.
	steps []batchStep
}

type batchReq struct{ id, body string }

type batchCounts struct{ total, ok, failed, canceled, expired int }

type batchStep struct {
	at     time.Duration
	status string
	counts batchCounts
}

var batchRows = []batchRow{openAIBatchRow, anthropicBatchRow, azureBatchRow, geminiBatchRow, geminiFileBatchRow}

// azureBatchRow is OpenAI's batch API under an Azure resource's /openai,
// with a classic api-version in the base URL's query (merged into every
// call's own query) and the api-key header. The mock serves it with
// OpenAI's batch handlers behind Azure's gate, so the mock's wire is
// tested by the openai row.
var azureBatchRow = func() batchRow {
	r := openAIBatchRow
	r.name, r.basePath = "azure", "/openai?api-version=2024-10-21"
	r.new = func(c providers.Config) providers.BatchClient { return azure.NewBatch(c) }
	r.wire = batchWire{}
	return r
}()

var openAIBatchRow = batchRow{
	name: "openai", new: func(c providers.Config) providers.BatchClient { return openai.NewBatch(c) },
	basePath: "/v1/", syncPath: "/v1/chat/completions",
	body: func(p string) string {
		return fmt.Sprintf(`{"model":"gpt-mock","messages":[{"role":"user","content":%q}],"max_completion_tokens":20}`, p)
	},
	model: "gpt-mock", textPath: "choices.0.message.content",
	bad: `{"model":"gpt-mock","messages":[]}`, serverErr: "server_error",
	idPrefix: "batch_", maxItems: 50_000, labels: true,
	validIDs: map[string]bool{"a": true, "row 1/é": true, "": false, strings.Repeat("x", 65): false, "tab\there": false},
	oddID:    `needs "escaping" é`,
	tooLarge: "invalid_request_error", authCode: "invalid_api_key",
	created: "validating", running: "in_progress", cancelling: "cancelling", cancelled: "cancelled", expired: "expired", completed: "completed",
	progress: true,
	wire: batchWire{
		create: func(t *testing.T, srv *httptest.Server, reqs []batchReq) map[string]any {
			var data bytes.Buffer
			for _, r := range reqs {
				fmt.Fprintf(&data, `{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":%s}`+"\n", r.id, r.body)
			}
			f := batchDecode(t, batchWant(t, batchUpload(t, srv, data.Bytes()), 200))
			if f["object"] != "file" || f["purpose"] != "batch" || f["bytes"] != float64(data.Len()) {
				t.Fatalf("file object %v", f)
			}
			return batchDecode(t, batchWant(t, batchPost(t, srv, "/v1/batches",
				fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"job":"t"}}`, f["id"])), 200))
		},
		get:    func(id string) string { return "/v1/batches/" + id },
		status: "status",
		results: func(t *testing.T, srv *httptest.Server, b map[string]any) []byte {
			var all []byte
			for _, k := range []string{"output_file_id", "error_file_id"} {
				if id, ok := b[k].(string); ok {
					all = append(all, batchWant(t, batchGet(t, srv, "/v1/files/"+id+"/content"), 200)...)
				}
			}
			return all
		},
		bodyAt: []string{"response", "body"},
		counts: func(c batchCounts) string {
			return fmt.Sprintf(`{"completed":%d,"failed":%d,"total":%d}`, c.ok, c.failed, c.total)
		},
		createdFields: func(t *testing.T, b map[string]any) {
			if b["object"] != "batch" || b["output_file_id"] != nil || batchPath(b, "metadata", "job") != "t" {
				t.Errorf("created batch %v", b)
			}
		},
		endedFields: func(t *testing.T, srv *httptest.Server, b map[string]any, state string, end time.Time) {
			if b[state+"_at"] != float64(end.Unix()) || state == "completed" && (b["in_progress_at"] == nil || b["finalizing_at"] == nil || b["error_file_id"] != nil) {
				t.Errorf("%s batch %v", state, b)
			}
		},
		cancelFields: func(t *testing.T, b map[string]any, at time.Time) {
			if b["cancelling_at"] != float64(at.Unix()) {
				t.Errorf("cancelling batch %v", b)
			}
		},
		failure: func(l map[string]any) (float64, any) {
			st, _ := batchPath(l, "response", "status_code").(float64)
			return st, batchPath(l, "response", "body", "error", "type")
		},
		check: func(t *testing.T, l map[string]any) {
			if l["response"] != nil && l["error"] != nil || !strings.HasPrefix(fmt.Sprint(l["id"]), "batch_req_") {
				t.Errorf("result line %v", l)
			}
		},
		outcome: func(l map[string]any) string {
			switch code := batchPath(l, "error", "code"); {
			case code == "batch_expired":
				return "expired"
			case code == "batch_cancelled":
				return "canceled"
			case batchPath(l, "response", "status_code") == float64(200):
				return "succeeded"
			}
			return "errored"
		},
		steps: []batchStep{
			{5 * time.Second, "validating", batchCounts{total: 10}},
			{10 * time.Second, "in_progress", batchCounts{total: 10}},
			{50 * time.Second, "in_progress", batchCounts{total: 10, ok: 5}},
			{95 * time.Second, "finalizing", batchCounts{total: 10, ok: 10}},
			{100 * time.Second, "completed", batchCounts{total: 10, ok: 10}},
		},
	},
}

var anthropicBatchRow = batchRow{
	name: "anthropic", new: func(c providers.Config) providers.BatchClient { return anthropic.NewBatch(c) },
	basePath: "", syncPath: "/v1/messages",
	body: func(p string) string {
		return fmt.Sprintf(`{"model":"claude-mock","max_tokens":20,"messages":[{"role":"user","content":%q}]}`, p)
	},
	model: "claude-mock", textPath: "content.0.text",
	bad: `{"model":"claude-mock","messages":[{"role":"user","content":"x"}]}`, badMsg: "max_tokens", serverErr: "api_error",
	idPrefix: "msgbatch_", maxItems: 100_000,
	validIDs: map[string]bool{"a_B-9": true, "a b": false, "": false, strings.Repeat("x", 64): true, strings.Repeat("x", 65): false, "é": false},
	oddID:    "a_B-9",
	envelope: int64(len(`{"requests":[]}`)) - 1, // ItemSize counts a comma per item; the last has none
	tooLarge: "request_too_large", authCode: "authentication_error",
	created: "in_progress", running: "in_progress", cancelling: "canceling", cancelled: "ended", expired: "ended", completed: "ended",
	resultsEarly: true,
	wire: batchWire{
		create: func(t *testing.T, srv *httptest.Server, reqs []batchReq) map[string]any {
			var items []string
			for _, r := range reqs {
				items = append(items, fmt.Sprintf(`{"custom_id":%q,"params":%s}`, r.id, r.body))
			}
			return batchDecode(t, batchWant(t, batchPost(t, srv, "/v1/messages/batches", `{"requests":[`+strings.Join(items, ",")+`]}`, "anthropic-version", "2023-06-01"), 200))
		},
		get:    func(id string) string { return "/v1/messages/batches/" + id },
		status: "processing_status",
		results: func(t *testing.T, srv *httptest.Server, b map[string]any) []byte {
			return batchWant(t, batchGet(t, srv, strings.TrimPrefix(b["results_url"].(string), srv.URL)), 200)
		},
		bodyAt: []string{"result", "message"},
		counts: func(c batchCounts) string {
			if c.canceled+c.expired+c.ok+c.failed == 0 || c.ok+c.failed+c.canceled+c.expired < c.total {
				return fmt.Sprintf(`{"canceled":0,"errored":0,"expired":0,"processing":%d,"succeeded":0}`, c.total)
			}
			return fmt.Sprintf(`{"canceled":%d,"errored":%d,"expired":%d,"processing":0,"succeeded":%d}`, c.canceled, c.failed, c.expired, c.ok)
		},
		createdFields: func(t *testing.T, b map[string]any) {
			if b["type"] != "message_batch" || b["results_url"] != nil || b["created_at"] != "2026-03-01T12:00:00.000000Z" || b["expires_at"] != "2026-03-02T12:00:00.000000Z" {
				t.Errorf("created batch %v", b)
			}
		},
		endedFields: func(t *testing.T, srv *httptest.Server, b map[string]any, _ string, end time.Time) {
			if b["ended_at"] != end.Format("2006-01-02T15:04:05.000000Z") || b["results_url"] != srv.URL+"/v1/messages/batches/"+b["id"].(string)+"/results" {
				t.Errorf("ended batch %v", b)
			}
		},
		cancelFields: func(t *testing.T, b map[string]any, at time.Time) {
			if b["cancel_initiated_at"] != at.Format("2006-01-02T15:04:05.000000Z") {
				t.Errorf("canceling batch %v", b)
			}
		},
		failure: func(l map[string]any) (float64, any) {
			switch batchPath(l, "result", "error", "error", "type") {
			case "invalid_request_error":
				return 400, "invalid_request_error"
			case "api_error":
				return 500, "api_error"
			}
			return 0, batchPath(l, "result", "error", "error", "type")
		},
		check: func(t *testing.T, l map[string]any) {
			if batchPath(l, "result", "type") == "errored" && (batchPath(l, "result", "error", "type") != "error" ||
				!strings.HasPrefix(fmt.Sprint(batchPath(l, "result", "error", "request_id")), "req_")) {
				t.Errorf("errored line %v", l)
			}
		},
		outcome: func(l map[string]any) string { return fmt.Sprint(batchPath(l, "result", "type")) },
		steps: []batchStep{
			{5 * time.Second, "in_progress", batchCounts{total: 10}},
			{99 * time.Second, "in_progress", batchCounts{total: 10}},
			{100 * time.Second, "ended", batchCounts{total: 10, ok: 10}},
		},
	},
}
