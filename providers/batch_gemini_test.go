package providers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/gemini"
	"github.com/llmrun/llmrun/providers/mock"
)

// The Gemini row of the batch suite (wire-formats §5.7): requests inline,
// a long-running Operation polled until done, responses inline with their
// keys, int64 counts as strings, no cancelling state, and no results for
// requests an expired or cancelled batch never ran.

// gmState reads an Operation's state in the client's words.
func gmState(b map[string]any) any {
	s, _ := batchPath(b, "metadata", "state").(string)
	return strings.ToLower(strings.TrimPrefix(s, "BATCH_STATE_"))
}

var geminiBatchRow = batchRow{
	name: "gemini", new: func(c providers.Config) providers.BatchClient { return gemini.NewBatch(c) },
	basePath: "/v1beta", syncPath: "/v1beta/models/gemini-mock:generateContent",
	body: func(p string) string {
		return fmt.Sprintf(`{"model":"gemini-mock","contents":[{"role":"user","parts":[{"text":%q}]}],"generationConfig":{"maxOutputTokens":20}}`, p)
	},
	model: "gemini-mock", textPath: "candidates.0.content.parts.0.text",
	bad: `{"model":"gemini-mock","contents":[]}`, badMsg: "contents", serverErr: "INTERNAL",
	idPrefix: "batches/", maxItems: 50_000,
	validIDs: map[string]bool{"a": true, "row 1/é": true, "": false, strings.Repeat("x", 256): true, strings.Repeat("x", 257): false, "tab\there": false},
	oddID:    `needs "escaping" é`,
	envelope: -1, // the mock counts the requests only; ItemSize counts a comma per item, the last has none
	tooLarge: "INVALID_ARGUMENT", authCode: "API_KEY_INVALID",
	created: "pending", running: "running", cancelling: "running", cancelled: "cancelled", expired: "expired", completed: "succeeded",
	resultsEarly: true, noErrorIDs: true, omitsUnrun: true,
	// 48 h; items run from 10 h to 90 h: 4 of 10 done.
	window: 48 * time.Hour, windowDone: 4,
	wire: batchWire{
		create: func(t *testing.T, srv *httptest.Server, reqs []batchReq) map[string]any {
			var items []string
			for _, r := range reqs {
				items = append(items, fmt.Sprintf(`{"request":%s,"metadata":{"key":%q}}`, r.body, r.id))
			}
			b := batchDecode(t, batchWant(t, batchPost(t, srv, "/v1beta/models/gemini-mock:batchGenerateContent",
				`{"batch":{"displayName":"suite","inputConfig":{"requests":{"requests":[`+strings.Join(items, ",")+`]}}}}`, "x-goog-api-key", batchKey), 200))
			b["id"] = b["name"] // as the suite reads a batch's id
			return b
		},
		get:      func(id string) string { return "/v1beta/" + id },
		stateOf:  gmState,
		countsAt: []any{"metadata", "batchStats"},
		cancel: func(t *testing.T, srv *httptest.Server, id string) (int, map[string]any) {
			r := batchPost(t, srv, "/v1beta/"+id+":cancel", `{}`)
			if r.status != 200 {
				return r.status, nil
			}
			if string(r.body) != "{}" {
				t.Errorf("cancel answered %s, want {}", r.body)
			}
			return r.status, batchDecode(t, batchWant(t, batchGet(t, srv, "/v1beta/"+id), 200))
		},
		inline: true,
		// The inline responses, one line each with its key lifted to
		// custom_id (the suite joins on it), the response bytes untouched.
		results: func(t *testing.T, srv *httptest.Server, b map[string]any) []byte {
			raw := batchWant(t, batchGet(t, srv, "/v1beta/"+b["name"].(string)), 200)
			out := gjson.GetBytes(raw, "metadata.output.inlinedResponses.inlinedResponses")
			if again := gjson.GetBytes(raw, "response.inlinedResponses.inlinedResponses"); again.Raw != out.Raw {
				t.Errorf("metadata.output and response differ:\n%s\n%s", out.Raw, again.Raw)
			}
			var lines bytes.Buffer
			out.ForEach(func(_, r gjson.Result) bool {
				fmt.Fprintf(&lines, `{"custom_id":%q,%s`+"\n", r.Get("metadata.key").Str, r.Raw[1:])
				return true
			})
			return lines.Bytes()
		},
		bodyAt: []string{"response"},
		counts: func(c batchCounts) string {
			if c.ok+c.failed+c.canceled+c.expired < c.total {
				return fmt.Sprintf(`{"pendingRequestCount":"%d","requestCount":"%d"}`, c.total, c.total)
			}
			return fmt.Sprintf(`{"failedRequestCount":"%d","pendingRequestCount":"%d","requestCount":"%d","successfulRequestCount":"%d"}`,
				c.failed, c.canceled+c.expired, c.total, c.ok)
		},
		createdFields: func(t *testing.T, b map[string]any) {
			m, _ := b["metadata"].(map[string]any)
			if b["done"] != false || b["response"] != nil || m["state"] != "BATCH_STATE_PENDING" || m["model"] != "models/gemini-mock" ||
				m["displayName"] != "suite" || m["createTime"] != "2026-03-01T12:00:00Z" || !strings.HasSuffix(fmt.Sprint(m["@type"]), "GenerateContentBatch") {
				t.Errorf("created batch %v", b)
			}
		},
		endedFields: func(t *testing.T, srv *httptest.Server, b map[string]any, _ string, end time.Time) {
			if b["done"] != true || batchPath(b, "metadata", "endTime") != end.UTC().Format(time.RFC3339Nano) ||
				batchPath(b, "metadata", "output", "inlinedResponses") == nil || !strings.HasSuffix(fmt.Sprint(batchPath(b, "response", "@type")), "GenerateContentBatchOutput") {
				t.Errorf("ended batch %v", b)
			}
		},
		cancelFields: func(t *testing.T, b map[string]any, _ time.Time) {
			if b["done"] != false || batchPath(b, "metadata", "state") != "BATCH_STATE_RUNNING" {
				t.Errorf("cancelling batch %v", b)
			}
		},
		failure: func(l map[string]any) (float64, any) {
			st, _ := batchPath(l, "error", "code").(float64)
			if typ := batchPath(l, "error", "status"); typ != "INVALID_ARGUMENT" {
				return st, typ
			}
			return st, "invalid_request_error"
		},
		check: func(t *testing.T, l map[string]any) {
			if l == nil {
				return // a request that never ran has no line
			}
			if (l["response"] == nil) == (l["error"] == nil) || batchPath(l, "metadata", "key") != l["custom_id"] {
				t.Errorf("result line %v", l)
			}
		},
		outcome: func(l map[string]any) string {
			switch {
			case l == nil:
				return ""
			case l["response"] != nil:
				return "succeeded"
			}
			return "errored"
		},
		steps: []batchStep{
			{5 * time.Second, "pending", batchCounts{total: 10}},
			{10 * time.Second, "running", batchCounts{total: 10}},
			{95 * time.Second, "running", batchCounts{total: 10}},
			{100 * time.Second, "succeeded", batchCounts{total: 10, ok: 10}},
		},
	},
}

// geminiFileBatchRow is the Gemini client sending every batch as an input
// file (an inline limit of 0): the suite's client tests run through the
// Files API upload, the file-input create and the responses file. (Its
// wire tests post by hand, inline, as the gemini row's do.)
var geminiFileBatchRow = func() batchRow {
	r := geminiBatchRow
	r.name = "gemini-file"
	r.new = func(c providers.Config) providers.BatchClient { return gemini.NewBatch(c, gemini.InlineUpTo(0)) }
	r.uploads = true
	// ItemSize counts an item as inline, {"request":…,"metadata":{"key":…}}
	// and a comma; its file line {"key":…,"request":…} is 13 bytes shorter
	// (the suite sizes 5 items).
	r.envelope = -13 * 5
	return r
}()

// TestGeminiBatchOneModel: a Gemini batch names one model in its URL; a
// batch mixing models is refused before anything is sent, as one whose
// bodies are not Gemini's.
func TestGeminiBatchOneModel(t *testing.T) {
	srv, m := batchMock(t, mock.Config{}, nil)
	b := geminiBatchRow.client(srv, batchKey)
	its := geminiBatchRow.items(2)
	its[1].Body = []byte(strings.Replace(string(its[1].Body), "gemini-mock", "gemini-other", 1))
	_, err := b.Submit(context.Background(), its, providers.BatchLabel{})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Class != providers.ClassInvalid || !strings.Contains(pe.Message, "one model") {
		t.Fatalf("mixed models: %v", err)
	}
	its[1].Body = []byte(`{"contents":[]}`)
	if _, err := b.Submit(context.Background(), its, providers.BatchLabel{}); providers.ClassOf(err) != providers.ClassInvalid {
		t.Fatalf("no model: %v", err)
	}
	if st := m.Stats(); st.BatchCalls != 0 {
		t.Errorf("%d calls sent", st.BatchCalls)
	}
}

// TestGeminiBatchInlineOrFile: a batch up to the inline limit goes in the
// create call, one byte more as an uploaded file (the limit injected
// small, at the size of 3 items); either way every result comes back,
// joined on its key, and a file's upload carries the key and its size.
func TestGeminiBatchInlineOrFile(t *testing.T) {
	its := geminiBatchRow.items(4)
	var limit int64
	for _, it := range its[:3] {
		limit += gemini.NewBatch(providers.Config{}).ItemSize(it)
	}
	var uploads []http.Header
	clk := newBatchClock()
	m := mock.New(mock.Config{Now: clk.Now, BatchDelay: time.Minute})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			uploads = append(uploads, r.Header.Clone())
		}
		m.ServeHTTP(w, r)
	}))
	defer srv.Close()
	b := gemini.NewBatch(providers.Config{BaseURL: srv.URL + "/v1beta", APIKey: batchKey, HTTPClient: srv.Client()}, gemini.InlineUpTo(limit))
	for n, wantFiles := range map[int]int64{3: 0, 4: 1} {
		before := m.Stats().FilesUploaded
		job, err := b.Submit(t.Context(), its[:n], providers.BatchLabel{Input: "in.jsonl"})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Stats().FilesUploaded - before; got != wantFiles {
			t.Fatalf("%d items: %d files uploaded, want %d", n, got, wantFiles)
		}
		clk.Advance(time.Hour)
		if job, err = b.Poll(t.Context(), job.ID); err != nil || !job.Ended {
			t.Fatalf("%+v %v", job, err)
		}
		got := map[string]string{}
		if err := b.Results(t.Context(), job, func(r providers.BatchResult) error {
			got[r.CustomID] = gjson.GetBytes(r.Body, geminiBatchRow.textPath).Str
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i, it := range its[:n] {
			if want := mock.Answer(fmt.Sprintf("Question %d", i), 20); got[it.CustomID] != want || len(got) != n {
				t.Errorf("%d items: %s: %q, want %q (%d results)", n, it.CustomID, got[it.CustomID], want, len(got))
			}
		}
	}
	if len(uploads) != 2 || uploads[0].Get("X-Goog-Api-Key") != batchKey || uploads[0].Get("X-Goog-Upload-Header-Content-Length") == "" ||
		uploads[1].Get("X-Goog-Upload-Command") != "upload, finalize" {
		t.Errorf("upload calls %v", uploads)
	}
}
