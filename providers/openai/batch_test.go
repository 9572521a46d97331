package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/providers/openai"
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

func batchServer(t *testing.T, cfg mock.Config) (*mock.Server, *openai.Batch, *batchClock) {
	t.Helper()
	clk := &batchClock{t: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	cfg.Now = clk.Now
	m := mock.New(cfg)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	b := openai.NewBatch(providers.Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-batch-test-0123456789", HTTPClient: srv.Client(), FirstByteTimeout: 5 * time.Second})
	return m, b, clk
}

func batchItems(n int) []providers.BatchItem {
	var out []providers.BatchItem
	for i := range n {
		out = append(out, providers.BatchItem{CustomID: fmt.Sprintf("it-%d", i),
			Body: []byte(fmt.Sprintf(`{"model":"gpt-mock","messages":[{"role":"user","content":"Question %d"}],"max_completion_tokens":20}`, i))})
	}
	return out
}

func batchCollect(t *testing.T, b *openai.Batch, job providers.BatchJob) map[string]providers.BatchResult {
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
	m, b, clk := batchServer(t, mock.Config{BatchDelay: time.Minute, BatchFailRate: 0.3, Seed: 2})
	ctx := context.Background()
	its := batchItems(10)
	its = append(its, providers.BatchItem{CustomID: "bad", Body: []byte(`{"model":"gpt-mock","messages":[]}`)})
	job, err := b.Submit(ctx, its, providers.BatchLabel{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != "validating" || job.Ended || job.Total != 11 || !strings.HasPrefix(job.ID, "batch_") {
		t.Fatalf("job %+v", job)
	}
	clk.Advance(30 * time.Second)
	if job, err = b.Poll(ctx, job.ID); err != nil || job.Status != "in_progress" || job.Succeeded+job.Failed == 0 {
		t.Fatalf("%v %+v", err, job)
	}
	clk.Advance(30 * time.Second)
	if job, err = b.Poll(ctx, job.ID); err != nil || !job.Ended || job.Status != "completed" || job.OutputFileID == "" || job.ErrorFileID == "" {
		t.Fatalf("%v %+v", err, job)
	}
	res := batchCollect(t, b, job)
	if len(res) != 11 || job.Succeeded+job.Failed != 11 {
		t.Fatalf("%d results, job %+v", len(res), job)
	}
	for i, it := range its[:10] {
		r := res[it.CustomID]
		switch r.Outcome {
		case providers.OutcomeSucceeded:
			if gjson.GetBytes(r.Body, "choices.0.message.content").Str != mock.Answer(fmt.Sprintf("Question %d", i), 20) ||
				r.Status != 200 || r.Usage.OutputTokens == 0 || r.Model != "gpt-mock" || r.RequestID == "" {
				t.Errorf("%s: %+v %s", it.CustomID, r, r.Body)
			}
		case providers.OutcomeErrored:
			if r.Status != 500 || r.Err.Class != providers.ClassServer || r.Err.Type != "server_error" {
				t.Errorf("%s: %+v", it.CustomID, r.Err)
			}
		default:
			t.Errorf("%s: outcome %s", it.CustomID, r.Outcome)
		}
	}
	if r := res["bad"]; r.Outcome != providers.OutcomeErrored || r.Err.Class != providers.ClassInvalid || r.Status != 400 {
		t.Errorf("bad: %+v", r)
	}
	if st := m.Stats(); st.BatchesCreated != 1 || st.FilesUploaded != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestBatchExpiredAndCancelled(t *testing.T) {
	_, b, clk := batchServer(t, mock.Config{BatchDelay: time.Minute, BatchExpire: true})
	ctx := context.Background()
	job, _ := b.Submit(ctx, batchItems(6), providers.BatchLabel{})
	clk.Advance(time.Minute)
	job, err := b.Poll(ctx, job.ID)
	if err != nil || job.Status != "expired" || !job.Ended || job.Expired != 3 || job.Succeeded != 3 {
		t.Fatalf("%v %+v", err, job)
	}
	n := map[string]int{}
	for _, r := range batchCollect(t, b, job) {
		n[r.Outcome]++
		if r.Outcome == providers.OutcomeExpired && r.Err.Code != "batch_expired" {
			t.Errorf("%+v", r.Err)
		}
	}
	if n[providers.OutcomeSucceeded] != 3 || n[providers.OutcomeExpired] != 3 {
		t.Errorf("outcomes %v", n)
	}

	job, _ = b.Submit(ctx, batchItems(4), providers.BatchLabel{})
	job, err = b.Cancel(ctx, job.ID)
	if err != nil || job.Status != "cancelling" || job.Ended {
		t.Fatalf("%v %+v", err, job)
	}
	clk.Advance(10 * time.Second)
	job, _ = b.Poll(ctx, job.ID)
	if job.Status != "cancelled" || job.Canceled != 4 {
		t.Fatalf("%+v", job)
	}
	for _, r := range batchCollect(t, b, job) {
		if r.Outcome != providers.OutcomeCanceled || r.Err.Code != "batch_cancelled" {
			t.Errorf("%+v", r)
		}
	}
	if _, err := b.Cancel(ctx, job.ID); providers.ClassOf(err) != providers.ClassInvalid {
		t.Errorf("cancel of an ended batch: %v", err)
	}
}

func TestBatchItemSizeIsExact(t *testing.T) {
	its := batchItems(5)
	its[2].CustomID = `needs "escaping" é`
	var sum int64
	probe := openai.NewBatch(providers.Config{})
	for _, it := range its {
		sum += probe.ItemSize(it)
	}
	_, b, _ := batchServer(t, mock.Config{BatchMaxBytes: sum})
	if _, err := b.Submit(context.Background(), its, providers.BatchLabel{}); err != nil {
		t.Fatalf("a file of exactly the limit: %v", err)
	}
	_, b, _ = batchServer(t, mock.Config{BatchMaxBytes: sum - 1})
	_, err := b.Submit(context.Background(), its, providers.BatchLabel{})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Status != 413 || pe.Class != providers.ClassInvalid {
		t.Fatalf("over the limit: %v", err)
	}
}

func TestBatchErrors(t *testing.T) {
	m := mock.New(mock.Config{APIKey: "sk-right-0000000000000"})
	srv := httptest.NewServer(m)
	defer srv.Close()
	key := "sk-wrong-key-abcdef0123456789"
	b := openai.NewBatch(providers.Config{BaseURL: srv.URL + "/v1", APIKey: key, HTTPClient: srv.Client()})
	_, err := b.Submit(context.Background(), batchItems(1), providers.BatchLabel{})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Class != providers.ClassAuth || pe.Code != "invalid_api_key" || strings.Contains(err.Error()+string(pe.Body), key[:12]) {
		t.Fatalf("%v / %s", err, pe.Body)
	}
	b = openai.NewBatch(providers.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-right-0000000000000", HTTPClient: srv.Client()})
	if _, err := b.Poll(context.Background(), "batch_nope"); !errors.As(err, &pe) || pe.Status != 404 || pe.Class != providers.ClassInvalid {
		t.Fatalf("%v", err)
	}
	srv.Close()
	if _, err := b.Poll(context.Background(), "batch_nope"); providers.ClassOf(err) != providers.ClassNetwork {
		t.Fatalf("closed server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Poll(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

func TestBatchValidID(t *testing.T) {
	b := openai.NewBatch(providers.Config{})
	for id, want := range map[string]bool{"a": true, "row 1/é": true, "": false, strings.Repeat("x", 65): false, "tab\there": false} {
		if b.ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v", id, !want)
		}
	}
}
