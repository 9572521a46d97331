package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/mock"
)

// The batch suite: every test here runs against every row of
// batch_rows_test.go, the batch client against providers/mock, and the
// mock's batch endpoints on the wire.

const batchKey = "sk-batch-test-0123456789"

// batchClock is a mock clock that moves only when told to.
type batchClock struct {
	mu sync.Mutex
	t  time.Time
}

func newBatchClock() *batchClock {
	return &batchClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *batchClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *batchClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// eachBatch runs fn for every row, as a subtest named after it.
func eachBatch(t *testing.T, fn func(t *testing.T, r batchRow)) {
	for _, r := range batchRows {
		t.Run(r.name, func(t *testing.T) { fn(t, r) })
	}
}

// batchMock serves a mock for cfg on the clock (nil: the mock's own).
func batchMock(t *testing.T, cfg mock.Config, clk *batchClock) (*httptest.Server, *mock.Server) {
	t.Helper()
	if clk != nil {
		cfg.Now = clk.Now
	}
	m := mock.New(cfg)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv, m
}

// client is r's batch client on srv.
func (r batchRow) client(srv *httptest.Server, key string) providers.BatchClient {
	return r.new(providers.Config{BaseURL: srv.URL + r.basePath, APIKey: key, HTTPClient: srv.Client(), FirstByteTimeout: 5 * time.Second})
}

// items are n requests "it-<i>" asking "Question <i>".
func (r batchRow) items(n int) []providers.BatchItem {
	var out []providers.BatchItem
	for i := range n {
		out = append(out, providers.BatchItem{CustomID: fmt.Sprintf("it-%d", i), Body: []byte(r.body(fmt.Sprintf("Question %d", i)))})
	}
	return out
}

// reqs are n raw requests "<prefix><i:03>" asking "Name prime number <i>.".
func (r batchRow) reqs(n int, prefix string) []batchReq {
	var out []batchReq
	for i := range n {
		out = append(out, batchReq{fmt.Sprintf("%s%03d", prefix, i), r.body(fmt.Sprintf("Name prime number %d.", i))})
	}
	return out
}

func batchCollect(t *testing.T, b providers.BatchClient, job providers.BatchJob) map[string]providers.BatchResult {
	t.Helper()
	out := map[string]providers.BatchResult{}
	if err := b.Results(context.Background(), job, func(r providers.BatchResult) error {
		if _, dup := out[r.CustomID]; dup {
			t.Fatalf("%s twice", r.CustomID)
		}
		out[r.CustomID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBatchRoundTrip(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		clk := newBatchClock()
		srv, m := batchMock(t, mock.Config{BatchDelay: time.Minute, BatchFailRate: 0.3, Seed: 2}, clk)
		b, ctx := r.client(srv, batchKey), context.Background()
		its := append(r.items(10), providers.BatchItem{CustomID: "bad", Body: []byte(r.bad)})
		job, err := b.Submit(ctx, its, providers.BatchLabel{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Status != r.created || job.Ended || job.Total != 11 || !strings.HasPrefix(job.ID, r.idPrefix) {
			t.Fatalf("job %+v", job)
		}
		if err := b.Results(ctx, job, func(providers.BatchResult) error { return nil }); r.resultsEarly && err == nil {
			t.Fatal("results of a running batch")
		}
		clk.Advance(30 * time.Second)
		if job, err = b.Poll(ctx, job.ID); err != nil || job.Status != r.running || job.Ended || r.progress && job.Succeeded+job.Failed == 0 {
			t.Fatalf("%v %+v", err, job)
		}
		clk.Advance(30 * time.Second)
		job, err = b.Poll(ctx, job.ID)
		if err != nil || !job.Ended || job.Status != r.completed || job.Succeeded+job.Failed != 11 || job.Failed == 0 ||
			(r.labels && (job.OutputFileID == "" || job.ErrorFileID == "")) || (!r.labels && job.ResultsURL == "") {
			t.Fatalf("%v %+v", err, job)
		}
		res := batchCollect(t, b, job)
		if len(res) != 11 {
			t.Fatalf("%d results", len(res))
		}
		for i, it := range its[:10] {
			got := res[it.CustomID]
			switch got.Outcome {
			case providers.OutcomeSucceeded:
				if gjson.GetBytes(got.Body, r.textPath).Str != mock.Answer(fmt.Sprintf("Question %d", i), 20) || got.Status != 200 ||
					got.Usage.InputTokens == 0 || got.Usage.OutputTokens == 0 || got.Model != r.model || (r.labels && got.RequestID == "") {
					t.Errorf("%s: %+v %s", it.CustomID, got, got.Body)
				}
			case providers.OutcomeErrored:
				if got.Status != 500 || got.Err.Class != providers.ClassServer || got.Err.Type != r.serverErr || (!r.noErrorIDs && got.RequestID == "") {
					t.Errorf("%s: %+v", it.CustomID, got.Err)
				}
			default:
				t.Errorf("%s: outcome %s", it.CustomID, got.Outcome)
			}
		}
		if bad := res["bad"]; bad.Outcome != providers.OutcomeErrored || bad.Err.Class != providers.ClassInvalid || bad.Status != 400 || !strings.Contains(bad.Err.Message, r.badMsg) {
			t.Errorf("bad: %+v", bad)
		}
		if st := m.Stats(); st.BatchesCreated != 1 || st.FilesUploaded != int64(boolInt(r.labels || r.uploads)) {
			t.Errorf("stats %+v", st)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBatchExpiredAndCancelled(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		ctx := context.Background()
		t.Run("expired", func(t *testing.T) {
			clk := newBatchClock()
			srv, _ := batchMock(t, mock.Config{BatchDelay: time.Minute, BatchExpire: true}, clk)
			b := r.client(srv, batchKey)
			job, _ := b.Submit(ctx, r.items(6), providers.BatchLabel{})
			clk.Advance(time.Minute)
			job, err := b.Poll(ctx, job.ID)
			if err != nil || job.Status != r.expired || !job.Ended || job.Expired != 3 || job.Succeeded != 3 {
				t.Fatalf("%v %+v", err, job)
			}
			n := map[string]int{}
			for _, res := range batchCollect(t, b, job) {
				n[res.Outcome]++
				if res.Outcome == providers.OutcomeExpired && res.Err.Code != "batch_expired" {
					t.Errorf("%+v", res.Err)
				}
			}
			if n[providers.OutcomeSucceeded] != 3 || n[providers.OutcomeExpired] != 3 && !r.omitsUnrun || n[providers.OutcomeExpired] != 0 && r.omitsUnrun {
				t.Errorf("outcomes %v", n)
			}
		})
		t.Run("cancelled", func(t *testing.T) {
			clk := newBatchClock()
			srv, _ := batchMock(t, mock.Config{BatchDelay: time.Minute}, clk)
			b := r.client(srv, batchKey)
			job, _ := b.Submit(ctx, r.items(4), providers.BatchLabel{})
			job, err := b.Cancel(ctx, job.ID)
			if err != nil || job.Status != r.cancelling || job.Ended {
				t.Fatalf("%v %+v", err, job)
			}
			clk.Advance(6 * time.Second)
			job, _ = b.Poll(ctx, job.ID)
			if job.Status != r.cancelled || !job.Ended || job.Canceled != 4 {
				t.Fatalf("%+v", job)
			}
			res := batchCollect(t, b, job)
			for _, res := range res {
				if res.Outcome != providers.OutcomeCanceled || res.Err.Code != "batch_cancelled" {
					t.Errorf("%+v", res)
				}
			}
			if r.omitsUnrun != (len(res) == 0) {
				t.Errorf("%d results of requests that never ran", len(res))
			}
			if _, err := b.Cancel(ctx, job.ID); providers.ClassOf(err) != providers.ClassInvalid {
				t.Errorf("cancel of an ended batch: %v", err)
			}
		})
	})
}

func TestBatchSizesAndIDs(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		its := r.items(5)
		its[2].CustomID = r.oddID
		probe := r.new(providers.Config{})
		var sum int64
		for _, it := range its {
			sum += probe.ItemSize(it)
		}
		srv, _ := batchMock(t, mock.Config{BatchMaxBytes: sum + r.envelope}, nil)
		if _, err := r.client(srv, batchKey).Submit(context.Background(), its, providers.BatchLabel{}); err != nil {
			t.Fatalf("exactly the limit: %v", err)
		}
		srv, _ = batchMock(t, mock.Config{BatchMaxBytes: sum + r.envelope - 1}, nil)
		_, err := r.client(srv, batchKey).Submit(context.Background(), its, providers.BatchLabel{})
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Status != 413 || pe.Type != r.tooLarge || pe.Class != providers.ClassInvalid {
			t.Fatalf("over the limit: %v", err)
		}
		for id, want := range r.validIDs {
			if probe.ValidID(id) != want {
				t.Errorf("ValidID(%q) = %v", id, !want)
			}
		}
		if probe.MaxItems() != r.maxItems || probe.Labels() != r.labels {
			t.Errorf("MaxItems %d, Labels %v", probe.MaxItems(), probe.Labels())
		}
	})
}

func TestBatchErrors(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		ctx := context.Background()
		srv, _ := batchMock(t, mock.Config{APIKey: "sk-right-0000000000000"}, nil)
		wrong := "sk-wrong-key-abcdef0123456789"
		_, err := r.client(srv, wrong).Submit(ctx, r.items(1), providers.BatchLabel{})
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Class != providers.ClassAuth || (pe.Code != r.authCode && pe.Type != r.authCode) || strings.Contains(err.Error()+string(pe.Body), wrong[:12]) {
			t.Fatalf("%v / %s", err, pe.Body)
		}
		b := r.client(srv, "sk-right-0000000000000")
		if _, err := b.Poll(ctx, r.idPrefix+"nope"); !errors.As(err, &pe) || pe.Status != 404 || pe.Class != providers.ClassInvalid {
			t.Fatalf("404: %v", err)
		}
		srv.Close()
		if _, err := b.Poll(ctx, "x"); providers.ClassOf(err) != providers.ClassNetwork {
			t.Fatalf("closed server: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := b.Poll(cctx, "x"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled ctx: %v", err)
		}
		srv, _ = batchMock(t, mock.Config{SpendCap: true}, nil)
		if _, err := r.client(srv, batchKey).Submit(ctx, r.items(1), providers.BatchLabel{}); providers.ClassOf(err) != providers.ClassQuota {
			t.Fatalf("spend cap: %v", err)
		}
	})
}

// TestBatchResultsElsewhereGetsNoKey: a result location on another host
// than the base URL is refused, and the key is not sent there.
func TestBatchResultsElsewhereGetsNoKey(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		if r.labels {
			t.Skip("results are files read from the base URL")
		}
		var sawKey bool
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			sawKey = req.Header.Get("x-api-key") != "" || req.Header.Get("Authorization") != ""
		}))
		defer evil.Close()
		srv, _ := batchMock(t, mock.Config{}, nil)
		err := r.client(srv, batchKey).Results(context.Background(), providers.BatchJob{ID: "x", Ended: true, ResultsURL: evil.URL + "/results"},
			func(providers.BatchResult) error { return nil })
		if err == nil || sawKey {
			t.Fatalf("err %v, key sent elsewhere: %v", err, sawKey)
		}
	})
}

// TestBatchBaseURLHidesUserinfo: the base URL a client reports (recorded
// in the state file) carries no credentials.
func TestBatchBaseURLHidesUserinfo(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		b := r.new(providers.Config{BaseURL: "http://user:s3cret@127.0.0.1:9" + r.basePath})
		if got := b.BaseURL(); strings.Contains(got, "s3cret") || strings.Contains(got, "user") || !strings.HasPrefix(got, "http://127.0.0.1:9") {
			t.Errorf("BaseURL() = %q", got)
		}
	})
}

// TestBatchListAndLabels: List returns the batches created since a time,
// newest first, with their creation time and (where the API keeps labels)
// the label Submit gave them; SentIDs reads a batch's custom_ids where the
// API can tell.
func TestBatchListAndLabels(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		clk := newBatchClock()
		srv, _ := batchMock(t, mock.Config{BatchDelay: time.Hour}, clk)
		b, ctx := r.client(srv, batchKey), context.Background()
		t0 := clk.Now()
		la := providers.BatchLabel{Job: "job1", Tag: "tag-a", Input: strings.Repeat("é", 300) + ".jsonl"}
		a, err := b.Submit(ctx, r.items(3), la)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		c, _ := b.Submit(ctx, r.items(2), providers.BatchLabel{Job: "job1", Tag: "tag-c"})
		all, err := b.List(ctx, t0)
		if err != nil || len(all) != 2 || all[0].ID != c.ID || all[1].ID != a.ID || !all[1].Created.Equal(t0) || all[1].Total != 3 {
			t.Fatalf("%v %+v", err, all)
		}
		if recent, _ := b.List(ctx, t0.Add(30*time.Minute)); len(recent) != 1 || recent[0].ID != c.ID {
			t.Errorf("since: %+v", recent)
		}
		polled, _ := b.Poll(ctx, a.ID)
		for _, got := range []providers.BatchLabel{all[1].Label, polled.Label, a.Label} {
			switch {
			case !r.labels && got != (providers.BatchLabel{}):
				t.Errorf("label %+v from an API without labels", got)
			case r.labels && (got.Job != la.Job || got.Tag != la.Tag || len(got.Input) > providers.MaxLabelValue || !strings.HasPrefix(la.Input, got.Input) || got.Input == ""):
				t.Errorf("label %+v, want %+v (input cut to %d bytes)", got, la, providers.MaxLabelValue)
			}
		}
		var ids []string
		err = b.SentIDs(ctx, a, func(id string) error { ids = append(ids, id); return nil })
		switch {
		case r.labels && (err != nil || !slices.Equal(ids, []string{"it-0", "it-1", "it-2"})):
			t.Errorf("SentIDs %v %v", err, ids)
		case !r.labels && !errors.Is(err, errors.ErrUnsupported):
			t.Errorf("SentIDs %v", err)
		}
	})
}

// TestBatchListPages: List reads on past a full page.
func TestBatchListPages(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		page := map[bool]int{true: 100, false: 1000}[r.labels]
		srv, _ := batchMock(t, mock.Config{BatchDelay: time.Hour}, newBatchClock())
		b, ctx := r.client(srv, batchKey), context.Background()
		for range page + 1 {
			if _, err := b.Submit(ctx, r.items(1), providers.BatchLabel{}); err != nil {
				t.Fatal(err)
			}
		}
		if all, err := b.List(ctx, time.Time{}); err != nil || len(all) != page+1 {
			t.Fatalf("%v: %d batches", err, len(all))
		}
	})
}

// TestBatchResumeReusesUpload: Submit with Resume uses the input file an
// interrupted attempt uploaded (same content) instead of uploading again.
func TestBatchResumeReusesUpload(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		if !r.labels {
			t.Skip("no uploads: the requests go inline")
		}
		srv, m := batchMock(t, mock.Config{}, nil)
		b, ctx := r.client(srv, batchKey), context.Background()
		b.Submit(ctx, r.items(3), providers.BatchLabel{Tag: "t1"})
		job, err := b.Submit(ctx, r.items(3), providers.BatchLabel{Tag: "t1", Resume: true})
		if st := m.Stats(); err != nil || st.FilesUploaded != 1 || st.BatchesCreated != 2 || job.Total != 3 {
			t.Fatalf("%v: stats %+v", err, st)
		}
		b.Submit(ctx, r.items(4), providers.BatchLabel{Tag: "t2", Resume: true})
		if st := m.Stats(); st.FilesUploaded != 2 {
			t.Fatalf("another content reused a file: stats %+v", st)
		}
	})
}

// The mock's side: the batch endpoints on the wire.

// TestBatchMockLifecycle: a batch's timeline as the mock shows it, its
// results byte for byte the synchronous answers, and the stats.
func TestBatchMockLifecycle(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		if r.wire.create == nil {
			t.Skip("this row's batch routes are another row's handlers")
		}
		clk := newBatchClock()
		srv, m := batchMock(t, mock.Config{BatchDelay: 100 * time.Second}, clk)
		reqs := r.reqs(10, "row-")
		b := r.wire.create(t, srv, reqs)
		id := b["id"].(string)
		if r.wire.state(b) != r.created || !strings.HasPrefix(id, r.idPrefix) || r.wire.countsOf(b) != r.wire.counts(batchCounts{total: 10}) {
			t.Fatalf("created batch %v", b)
		}
		r.wire.createdFields(t, b)
		if r.resultsEarly && !r.wire.inline {
			batchWant(t, batchGet(t, srv, r.wire.get(id)+"/results"), 400)
		}
		start, elapsed := clk.Now(), time.Duration(0)
		for _, s := range r.wire.steps {
			clk.Advance(s.at - elapsed)
			elapsed = s.at
			b = batchDecode(t, batchWant(t, batchGet(t, srv, r.wire.get(id)), 200))
			if r.wire.state(b) != s.status || r.wire.countsOf(b) != r.wire.counts(s.counts) {
				t.Fatalf("at %v: %s %s, want %s %s", s.at, r.wire.state(b), r.wire.countsOf(b), s.status, r.wire.counts(s.counts))
			}
		}
		r.wire.endedFields(t, srv, b, "completed", start.Add(100*time.Second))
		data := r.wire.results(t, srv, b)
		lines := batchLines(t, data)
		if len(lines) != 10 {
			t.Fatalf("%d result lines", len(lines))
		}
		// Each batch body is byte for byte the body the synchronous endpoint returns.
		for _, q := range reqs {
			if r.wire.outcome(lines[q.id]) != "succeeded" {
				t.Errorf("%s: %v", q.id, lines[q.id])
			}
			r.wire.check(t, lines[q.id])
			sync := batchWant(t, batchPost(t, srv, r.syncPath, q.body), 200)
			if got := batchRaw(t, data, q.id, r.wire.bodyAt...); !bytes.Equal(got, sync) {
				t.Errorf("%s: batch body %s\nsync body %s", q.id, got, sync)
			}
		}
		st := m.Stats()
		if st.BatchesCreated != 1 || st.FilesUploaded != int64(boolInt(r.labels)) || st.BatchItems != 10 || st.BatchSucceeded != 10 || st.Completed != 20 || st.Duplicates != 10 {
			t.Errorf("stats %+v", st)
		}
		// Polling an ended batch again changes nothing.
		clk.Advance(time.Hour)
		if again := batchDecode(t, batchGet(t, srv, r.wire.get(id)).body); !reflect.DeepEqual(again, b) || !bytes.Equal(r.wire.results(t, srv, again), data) || m.Stats().BatchSucceeded != 10 {
			t.Errorf("second look %v", again)
		}
		if status, _ := r.wire.doCancel(t, srv, id); status != 400 {
			t.Errorf("cancel of an ended batch: %d", status)
		}
	})
}

// TestBatchMockFailures: injected 500s and an invalid body, the same on
// every server with the same seed, in an order other than the input's.
func TestBatchMockFailures(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		if r.wire.create == nil {
			t.Skip("this row's batch routes are another row's handlers")
		}
		run := func() (map[string]any, []byte, *mock.Server) {
			srv, m := batchMock(t, mock.Config{BatchFailRate: 0.3, Seed: 5}, nil)
			b := r.wire.create(t, srv, append(r.reqs(40, "row-"), batchReq{"bad", r.bad}))
			b = batchDecode(t, batchWant(t, batchGet(t, srv, r.wire.get(b["id"].(string))), 200))
			return b, r.wire.results(t, srv, b), m
		}
		b, data, m := run()
		lines := batchLines(t, data)
		errs, outs := 0, 0
		for cid, l := range lines {
			r.wire.check(t, l)
			if r.wire.outcome(l) == "succeeded" {
				outs++
				continue
			}
			errs++
			status, typ := r.wire.failure(l)
			switch {
			case cid == "bad" && (status != 400 || typ != "invalid_request_error"):
				t.Errorf("bad: %v", l)
			case cid != "bad" && (status != 500 || typ != r.serverErr):
				t.Errorf("%s: %v", cid, l)
			}
		}
		if len(lines) != 41 || errs < 5 || r.wire.outcome(lines["bad"]) != "errored" {
			t.Fatalf("%d errors, %d outputs; bad: %v", errs, outs, lines["bad"])
		}
		if got := r.wire.countsOf(b); got != r.wire.counts(batchCounts{total: 41, ok: outs, failed: errs}) {
			t.Errorf("counts %s", got)
		}
		if st := m.Stats(); st.BatchErrored != int64(errs) || st.BatchSucceeded != int64(outs) {
			t.Errorf("stats %+v", st)
		}
		// The same items fail on every server with the same seed.
		if b2, _, _ := run(); r.wire.countsOf(b2) != r.wire.countsOf(b) {
			t.Errorf("not deterministic: %s vs %s", r.wire.countsOf(b2), r.wire.countsOf(b))
		}
		// Not in input order: clients must join on custom_id.
		if i1, i2, i3 := bytes.Index(data, []byte(`"row-001"`)), bytes.Index(data, []byte(`"row-002"`)), bytes.Index(data, []byte(`"row-003"`)); i1 < i2 && i2 < i3 {
			t.Errorf("results in input order")
		}
	})
}

// TestBatchMockExpireAndCancel: expiry (BatchExpire, and the completion window)
// and a cancel part-way, as the mock shows them.
func TestBatchMockExpireAndCancel(t *testing.T) {
	eachBatch(t, func(t *testing.T, r batchRow) {
		if r.wire.create == nil {
			t.Skip("this row's batch routes are another row's handlers")
		}
		t.Run("expire", func(t *testing.T) {
			clk := newBatchClock()
			srv, m := batchMock(t, mock.Config{BatchDelay: time.Minute, BatchExpire: true}, clk)
			id := r.wire.create(t, srv, r.reqs(9, "row-"))["id"].(string)
			clk.Advance(time.Minute)
			b := batchDecode(t, batchGet(t, srv, r.wire.get(id)).body)
			if r.wire.state(b) != r.expired || r.wire.countsOf(b) != r.wire.counts(batchCounts{total: 9, ok: 4, expired: 5}) {
				t.Fatalf("batch %v", b)
			}
			r.wire.endedFields(t, srv, b, "expired", clk.Now())
			lines := batchLines(t, r.wire.results(t, srv, b))
			for i := range 9 {
				cid := fmt.Sprintf("row-%03d", i)
				r.wire.check(t, lines[cid])
				want := "expired"
				if r.omitsUnrun {
					want = "" // no line at all
				}
				if got := r.wire.outcome(lines[cid]); i < 4 && got != "succeeded" || i >= 4 && got != want {
					t.Errorf("%s: %v", cid, lines[cid])
				}
			}
			if st := m.Stats(); st.BatchExpired != 5 || st.BatchSucceeded != 4 {
				t.Errorf("stats %+v", st)
			}
		})
		t.Run("window", func(t *testing.T) {
			clk := newBatchClock()
			srv, _ := batchMock(t, mock.Config{BatchDelay: 100 * time.Hour}, clk)
			id := r.wire.create(t, srv, r.reqs(10, "row-"))["id"].(string)
			// Done by 24 h: OpenAI works from 10 h to 90 h (1 item), Anthropic from 0 to 100 h (2).
			window, done := 24*time.Hour, map[bool]int{true: 1, false: 2}[r.labels]
			if r.window != 0 {
				window, done = r.window, r.windowDone
			}
			clk.Advance(window)
			if b := batchDecode(t, batchGet(t, srv, r.wire.get(id)).body); r.wire.state(b) != r.expired || r.wire.countsOf(b) != r.wire.counts(batchCounts{total: 10, ok: done, expired: 10 - done}) {
				t.Fatalf("batch %v", b)
			}
		})
		t.Run("cancel", func(t *testing.T) {
			clk := newBatchClock()
			srv, m := batchMock(t, mock.Config{BatchDelay: 100 * time.Second}, clk)
			id := r.wire.create(t, srv, r.reqs(10, "c"))["id"].(string)
			clk.Advance(35 * time.Second) // 3 of 10 done
			status, b := r.wire.doCancel(t, srv, id)
			if status != 200 || r.wire.state(b) != r.cancelling {
				t.Fatalf("cancel answer %v", b)
			}
			r.wire.cancelFields(t, b, clk.Now())
			clk.Advance(5 * time.Second)
			if b := batchDecode(t, batchGet(t, srv, r.wire.get(id)).body); r.wire.state(b) != r.cancelling {
				t.Fatalf("status %v", r.wire.state(b))
			}
			clk.Advance(5 * time.Second)
			b = batchDecode(t, batchGet(t, srv, r.wire.get(id)).body)
			if r.wire.state(b) != r.cancelled || r.wire.countsOf(b) != r.wire.counts(batchCounts{total: 10, ok: 3, canceled: 7}) {
				t.Fatalf("batch %v", b)
			}
			r.wire.endedFields(t, srv, b, "cancelled", clk.Now())
			lines, canceled := batchLines(t, r.wire.results(t, srv, b)), 0
			for _, l := range lines {
				r.wire.check(t, l)
				if r.wire.outcome(l) == "canceled" {
					canceled++
				}
			}
			want, last := 7, "canceled"
			if r.omitsUnrun {
				want, last = 0, "" // no lines at all
			}
			if canceled != want || r.wire.outcome(lines["c000"]) != "succeeded" || r.wire.outcome(lines["c009"]) != last {
				t.Errorf("results %v", lines)
			}
			if st := m.Stats(); st.BatchesCanceled != 1 || st.BatchCanceledItems != 7 {
				t.Errorf("stats %+v", st)
			}
			if status, _ := r.wire.doCancel(t, srv, id); status != 400 {
				t.Errorf("cancel of an ended batch: %d", status)
			}
		})
	})
}

// Wire helpers.

type batchResp struct {
	status int
	body   []byte
	err    error
}

func batchDo(t *testing.T, srv *httptest.Server, req *http.Request, headers ...string) batchResp {
	t.Helper()
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return batchResp{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return batchResp{status: resp.StatusCode, body: b, err: err}
}

func batchGet(t *testing.T, srv *httptest.Server, path string, headers ...string) batchResp {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	return batchDo(t, srv, req, headers...)
}

func batchPost(t *testing.T, srv *httptest.Server, path, body string, headers ...string) batchResp {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return batchDo(t, srv, req, headers...)
}

// batchUpload posts data as an OpenAI batch input file.
func batchUpload(t *testing.T, srv *httptest.Server, data []byte) batchResp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/files", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return batchDo(t, srv, req)
}

// batchWant fails unless r has the status; it returns the body.
func batchWant(t *testing.T, r batchResp, status int) []byte {
	t.Helper()
	if r.err != nil || r.status != status {
		t.Fatalf("status %d (%v), want %d: %s", r.status, r.err, status, r.body)
	}
	return r.body
}

func batchDecode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// batchPath walks keys (strings, or ints for arrays) into v.
func batchPath(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// state is the batch object's status, in the client's words.
func (w batchWire) state(b map[string]any) any {
	if w.stateOf != nil {
		return w.stateOf(b)
	}
	return b[w.status]
}

// countsOf is the batch object's request counts, as JSON.
func (w batchWire) countsOf(b map[string]any) string {
	at := w.countsAt
	if at == nil {
		at = []any{"request_counts"}
	}
	c, _ := json.Marshal(batchPath(b, at...))
	return string(c)
}

// doCancel asks to cancel batch id and returns the status and the batch
// object the answer shows.
func (w batchWire) doCancel(t *testing.T, srv *httptest.Server, id string) (int, map[string]any) {
	t.Helper()
	if w.cancel != nil {
		return w.cancel(t, srv, id)
	}
	r := batchPost(t, srv, w.get(id)+"/cancel", "")
	if r.status != 200 {
		return r.status, nil
	}
	return r.status, batchDecode(t, r.body)
}

// batchLines decodes JSONL into objects by custom_id.
func batchLines(t *testing.T, data []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m := batchDecode(t, line)
		id, _ := m["custom_id"].(string)
		if _, dup := out[id]; dup {
			t.Fatalf("custom_id %q twice", id)
		}
		out[id] = m
	}
	return out
}

// batchRaw returns the raw JSON at keys inside the JSONL line of cid.
func batchRaw(t *testing.T, data []byte, cid string, keys ...string) []byte {
	t.Helper()
	for _, line := range bytes.Split(data, []byte("\n")) {
		if gjson.GetBytes(line, "custom_id").Str == cid {
			return []byte(gjson.GetBytes(line, strings.Join(keys, ".")).Raw)
		}
	}
	t.Fatalf("no line for %s", cid)
	return nil
}
