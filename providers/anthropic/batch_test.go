package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/anthropic"
	"github.com/llmrun/llmrun/providers/mock"
)

type batchClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *batchClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *batchClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func batchServer(t *testing.T, cfg mock.Config) (*mock.Server, *anthropic.Batch, *batchClock) {
	t.Helper()
	clk := &batchClock{t: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	cfg.Now = clk.Now
	m := mock.New(cfg)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	b := anthropic.NewBatch(providers.Config{BaseURL: srv.URL, APIKey: "sk-ant-batch-0123456789", HTTPClient: srv.Client()})
	return m, b, clk
}

func batchItems(n int) []providers.BatchItem {
	var out []providers.BatchItem
	for i := range n {
		out = append(out, providers.BatchItem{CustomID: fmt.Sprintf("it-%d", i),
			Body: []byte(fmt.Sprintf(`{"model":"claude-mock","max_tokens":20,"messages":[{"role":"user","content":"Question %d"}]}`, i))})
	}
	return out
}

func batchCollect(t *testing.T, b *anthropic.Batch, job providers.BatchJob) map[string]providers.BatchResult {
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
	_, b, clk := batchServer(t, mock.Config{BatchDelay: time.Minute, BatchFailRate: 0.3, Seed: 4})
	ctx := context.Background()
	its := append(batchItems(10), providers.BatchItem{CustomID: "bad", Body: []byte(`{"model":"claude-mock","messages":[{"role":"user","content":"x"}]}`)})
	job, err := b.Submit(ctx, its, providers.BatchLabel{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != "in_progress" || job.Total != 11 || job.Ended || !strings.HasPrefix(job.ID, "msgbatch_") {
		t.Fatalf("job %+v", job)
	}
	if err := b.Results(ctx, job, func(providers.BatchResult) error { return nil }); err == nil {
		t.Fatal("results of a running batch")
	}
	clk.Advance(time.Minute)
	job, err = b.Poll(ctx, job.ID)
	if err != nil || !job.Ended || job.ResultsURL == "" || job.Succeeded+job.Failed != 11 || job.Failed == 0 {
		t.Fatalf("%v %+v", err, job)
	}
	res := batchCollect(t, b, job)
	for i, it := range its[:10] {
		r := res[it.CustomID]
		switch r.Outcome {
		case providers.OutcomeSucceeded:
			if gjson.GetBytes(r.Body, "content.0.text").Str != mock.Answer(fmt.Sprintf("Question %d", i), 20) || r.Status != 200 || r.Usage.InputTokens == 0 || r.Model != "claude-mock" {
				t.Errorf("%s: %+v %s", it.CustomID, r, r.Body)
			}
		case providers.OutcomeErrored:
			if r.Status != 500 || r.Err.Class != providers.ClassServer || r.Err.Type != "api_error" || r.RequestID == "" {
				t.Errorf("%s: %+v", it.CustomID, r.Err)
			}
		default:
			t.Errorf("%s: %s", it.CustomID, r.Outcome)
		}
	}
	if r := res["bad"]; r.Outcome != providers.OutcomeErrored || r.Status != 400 || r.Err.Class != providers.ClassInvalid || !strings.Contains(r.Err.Message, "max_tokens") {
		t.Errorf("bad: %+v", r.Err)
	}
}

func TestBatchCancelAndExpire(t *testing.T) {
	_, b, clk := batchServer(t, mock.Config{BatchDelay: time.Minute})
	ctx := context.Background()
	job, _ := b.Submit(ctx, batchItems(4), providers.BatchLabel{})
	job, err := b.Cancel(ctx, job.ID)
	if err != nil || job.Status != "canceling" {
		t.Fatalf("%v %+v", err, job)
	}
	clk.Advance(6 * time.Second)
	job, _ = b.Poll(ctx, job.ID)
	if !job.Ended || job.Canceled != 4 {
		t.Fatalf("%+v", job)
	}
	for _, r := range batchCollect(t, b, job) {
		if r.Outcome != providers.OutcomeCanceled || r.Err.Code != "batch_cancelled" {
			t.Errorf("%+v", r)
		}
	}

	_, b, _ = batchServer(t, mock.Config{BatchExpire: true})
	job, _ = b.Submit(ctx, batchItems(4), providers.BatchLabel{})
	job, _ = b.Poll(ctx, job.ID)
	n := map[string]int{}
	for _, r := range batchCollect(t, b, job) {
		n[r.Outcome]++
	}
	if job.Expired != 2 || n[providers.OutcomeExpired] != 2 || n[providers.OutcomeSucceeded] != 2 {
		t.Errorf("job %+v outcomes %v", job, n)
	}
}

func TestBatchLimitsAndIDs(t *testing.T) {
	its := batchItems(5)
	var sum int64
	probe := anthropic.NewBatch(providers.Config{})
	for _, it := range its {
		sum += probe.ItemSize(it)
	}
	body := sum - 1 + int64(len(`{"requests":[]}`))
	_, b, _ := batchServer(t, mock.Config{BatchMaxBytes: body})
	if _, err := b.Submit(context.Background(), its, providers.BatchLabel{}); err != nil {
		t.Fatalf("exactly the limit: %v", err)
	}
	_, b, _ = batchServer(t, mock.Config{BatchMaxBytes: body - 1})
	_, err := b.Submit(context.Background(), its, providers.BatchLabel{})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Status != 413 || pe.Type != "request_too_large" || pe.Class != providers.ClassInvalid {
		t.Fatalf("over: %v", err)
	}
	for id, want := range map[string]bool{"a_B-9": true, "a b": false, "": false, strings.Repeat("x", 64): true, strings.Repeat("x", 65): false, "é": false} {
		if probe.ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v", id, !want)
		}
	}
	if probe.MaxItems() != 100_000 {
		t.Error("MaxItems")
	}
}

func TestBatchResultsURLElsewhereGetsNoKey(t *testing.T) {
	var sawKey bool
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sawKey = r.Header.Get("x-api-key") != "" }))
	defer evil.Close()
	_, b, _ := batchServer(t, mock.Config{})
	err := b.Results(context.Background(), providers.BatchJob{ID: "x", Ended: true, ResultsURL: evil.URL + "/results"}, func(providers.BatchResult) error { return nil })
	if err == nil || sawKey {
		t.Fatalf("err %v, key sent elsewhere: %v", err, sawKey)
	}
}

func TestBatchErrorsClassified(t *testing.T) {
	m := mock.New(mock.Config{SpendCap: true})
	srv := httptest.NewServer(m)
	defer srv.Close()
	b := anthropic.NewBatch(providers.Config{BaseURL: srv.URL, APIKey: "k-0123456789", HTTPClient: srv.Client()})
	_, err := b.Submit(context.Background(), batchItems(1), providers.BatchLabel{})
	if providers.ClassOf(err) != providers.ClassQuota {
		t.Fatalf("spend cap: %v", err)
	}
	if _, err := b.Poll(context.Background(), "msgbatch_nope"); providers.ClassOf(err) != providers.ClassInvalid {
		t.Fatalf("404: %v", err)
	}
}
