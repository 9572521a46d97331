package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/providers"
)

// fakeBatches is an in-memory BatchClient. A batch ends at its endAfter-th
// poll; its items succeed unless fail says otherwise; with expire set only
// the first half is answered.
type fakeBatches struct {
	mu       sync.Mutex
	maxItems int
	maxBytes int64
	endAfter int
	expire   bool
	fail     func(id string) bool
	// submitErrs are returned by the next Submit calls, in order.
	submitErrs []error
	// forget makes Poll answer 404 for every batch.
	forget bool
	// base is BaseURL's answer, "http://fake" if empty.
	base string

	submits  int
	jobs     map[string]*fakeJob
	polls    int
	canceled []string
}

type fakeJob struct {
	items    []providers.BatchItem
	polls    int
	canceled bool
}

func (f *fakeBatches) Name() string             { return "fake" }
func (f *fakeBatches) Format() providers.Format { return providers.FormatOpenAI }
func (f *fakeBatches) BaseURL() string {
	if f.base != "" {
		return f.base
	}
	return "http://fake"
}
func (f *fakeBatches) MaxItems() int   { return cmpOr(f.maxItems, 1000) }
func (f *fakeBatches) MaxBytes() int64 { return int64(cmpOr(int(f.maxBytes), 1<<20)) }
func (f *fakeBatches) ValidID(id string) bool {
	return id != "" && !strings.ContainsAny(id, " /") && len(id) <= 16
}
func (f *fakeBatches) ItemSize(it providers.BatchItem) int64 {
	return int64(len(it.CustomID) + len(it.Body) + 20)
}

func cmpOr(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

func (f *fakeBatches) Submit(ctx context.Context, items []providers.BatchItem) (providers.BatchJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.submitErrs) > 0 {
		err := f.submitErrs[0]
		f.submitErrs = f.submitErrs[1:]
		return providers.BatchJob{}, err
	}
	var size int64
	ids := map[string]bool{}
	for _, it := range items {
		size += f.ItemSize(it)
		if !f.ValidID(it.CustomID) || ids[it.CustomID] {
			return providers.BatchJob{}, &providers.Error{Class: providers.ClassInvalid, Status: 400, Message: "bad id " + it.CustomID}
		}
		ids[it.CustomID] = true
	}
	if len(items) > f.MaxItems() || size > f.MaxBytes() {
		return providers.BatchJob{}, &providers.Error{Class: providers.ClassInvalid, Status: 413, Message: "too large"}
	}
	f.submits++
	if f.jobs == nil {
		f.jobs = map[string]*fakeJob{}
	}
	id := fmt.Sprintf("fb_%d", f.submits)
	f.jobs[id] = &fakeJob{items: slices.Clone(items)}
	return providers.BatchJob{ID: id, Status: "validating", Total: len(items)}, nil
}

func (f *fakeBatches) view(id string, j *fakeJob) providers.BatchJob {
	job := providers.BatchJob{ID: id, Status: "in_progress", Total: len(j.items)}
	if j.polls >= f.endAfter || j.canceled {
		job.Ended, job.Status = true, "completed"
		for i, it := range j.items {
			switch {
			case j.canceled:
				job.Canceled++
			case f.expire && i >= len(j.items)/2:
				job.Expired++
			case f.fail != nil && f.fail(it.CustomID):
				job.Failed++
			default:
				job.Succeeded++
			}
		}
	}
	return job
}

func (f *fakeBatches) Poll(ctx context.Context, id string) (providers.BatchJob, error) {
	if err := ctx.Err(); err != nil {
		return providers.BatchJob{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	j := f.jobs[id]
	if j == nil || f.forget {
		return providers.BatchJob{}, &providers.Error{Class: providers.ClassInvalid, Status: 404, Message: "no such batch"}
	}
	j.polls++
	return f.view(id, j), nil
}

func (f *fakeBatches) Results(ctx context.Context, job providers.BatchJob, fn func(providers.BatchResult) error) error {
	f.mu.Lock()
	j := f.jobs[job.ID]
	items := slices.Clone(j.items)
	canceled := j.canceled
	f.mu.Unlock()
	slices.Reverse(items) // not input order
	for i, it := range items {
		r := providers.BatchResult{CustomID: it.CustomID, Outcome: providers.OutcomeSucceeded, Status: 200, RequestID: "req_" + it.CustomID,
			Body: fakeAnswer(it.CustomID, it.Body), Usage: providers.Usage{InputTokens: 3, OutputTokens: 5}}
		idx := len(items) - 1 - i
		switch {
		case canceled:
			r = providers.BatchResult{CustomID: it.CustomID, Outcome: providers.OutcomeCanceled, Err: &providers.Error{Code: "batch_cancelled", Message: "cancelled"}}
		case f.expire && idx >= len(items)/2:
			r = providers.BatchResult{CustomID: it.CustomID, Outcome: providers.OutcomeExpired, Err: &providers.Error{Code: "batch_expired", Message: "expired"}}
		case f.fail != nil && f.fail(it.CustomID):
			r.Outcome, r.Status, r.Body = providers.OutcomeErrored, 500, []byte(`{"error":{"message":"boom","type":"server_error"}}`)
			r.Err = &providers.Error{Class: providers.ClassServer, Status: 500, Type: "server_error", Message: "boom"}
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func fakeAnswer(id string, body []byte) []byte {
	return []byte(fmt.Sprintf(`{"id":"cmpl-%s","model":%q,"choices":[{"message":{"content":"answer %s"}}]}`, id, gjson.GetBytes(body, "model").Str, id))
}

func (f *fakeBatches) Cancel(ctx context.Context, id string) (providers.BatchJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[id]
	if j == nil {
		return providers.BatchJob{}, &providers.Error{Class: providers.ClassInvalid, Status: 404}
	}
	j.canceled = true
	f.canceled = append(f.canceled, id)
	return providers.BatchJob{ID: id, Status: "cancelling"}, nil
}

// offlineFixture is an input file and its checkpoint paths.
type offlineFixture struct {
	dir, in, out, errs string
	ids                []string
}

func newOfflineFixture(t *testing.T, ids ...string) *offlineFixture {
	t.Helper()
	dir := t.TempDir()
	fx := &offlineFixture{dir: dir, in: filepath.Join(dir, "in.jsonl"), out: filepath.Join(dir, "out.jsonl"), errs: filepath.Join(dir, "errors.jsonl"), ids: ids}
	var b bytes.Buffer
	for _, id := range ids {
		line, _ := json.Marshal(map[string]any{"custom_id": id, "prompt": "question " + id, "model": "m1"})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(fx.in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

func seqIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("q%03d", i)
	}
	return ids
}

// sleeps records the waits of a run instead of sleeping; stopAt > 0 ends
// the run (as a crash or Ctrl-C would) at that sleep.
type sleeps struct {
	mu     sync.Mutex
	waits  []time.Duration
	stopAt int
	cancel context.CancelFunc
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) bool {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	n := len(s.waits)
	s.mu.Unlock()
	if s.stopAt > 0 && n >= s.stopAt {
		s.cancel()
	}
	return ctx.Err() == nil
}

// runOffline opens the checkpoint, runs RunOffline and closes it.
func (fx *offlineFixture) run(t *testing.T, ctx context.Context, fc *fakeBatches, mod func(*OfflineConfig)) (*Summary, error, *bytes.Buffer) {
	t.Helper()
	src := &Source{Path: fx.in, Parser: Parser{Format: providers.FormatOpenAI}}
	chk, err := src.Check()
	if err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Open(checkpoint.Options{Output: fx.out, Errors: fx.errs, RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	sl := &sleeps{}
	cfg := OfflineConfig{Source: src, Total: chk.Requests, Client: fc, Store: st, PollInterval: time.Second, PollMax: 4 * time.Second, Sleep: sl.sleep, Log: &log}
	if mod != nil {
		mod(&cfg)
	}
	sum, err := RunOffline(ctx, cfg)
	if cerr := st.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return sum, err, &log
}

func readJSONL(t *testing.T, path string) map[string]gjson.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]gjson.Result{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		l := gjson.ParseBytes(line)
		id := l.Get("custom_id").Str
		if _, dup := out[id]; dup {
			t.Fatalf("%s: %s twice", path, id)
		}
		out[id] = l
	}
	return out
}

func openRecords(t *testing.T, out string) []BatchRecord {
	t.Helper()
	st, err := checkpoint.Status(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := OpenBatches(st.State)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestOfflineHappyPathAndLineShape(t *testing.T) {
	fx := newOfflineFixture(t, seqIDs(7)...)
	fc := &fakeBatches{endAfter: 2}
	sum, err, log := fx.run(t, context.Background(), fc, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if sum.Succeeded != 7 || sum.Pending != 0 || sum.InputTokens != 21 || fc.submits != 1 {
		t.Fatalf("summary %+v, %d submits", sum, fc.submits)
	}
	lines := readJSONL(t, fx.out)
	for _, id := range fx.ids {
		l := lines[id]
		if l.Get("response.body.choices.0.message.content").Str != "answer "+id || l.Get("response.status_code").Int() != 200 ||
			l.Get("llmrun.mode").Str != "batch" || l.Get("llmrun.provider").Str != "fake" || l.Get("llmrun.model").Str != "m1" ||
			l.Get("llmrun.attempts").Int() != 1 || l.Get("response.request_id").Str != "req_"+id || l.Get("error").Type != gjson.Null {
			t.Errorf("%s: %s", id, l.Raw)
		}
	}
	if recs := openRecords(t, fx.out); len(recs) != 0 {
		t.Errorf("records left: %+v", recs)
	}
	if !strings.Contains(log.String(), "submitted batch fb_1") || !strings.Contains(log.String(), "7/7 done (7 succeeded, 0 failed)") {
		t.Errorf("log:\n%s", log)
	}
	// A rerun has nothing to do.
	sum, err, _ = fx.run(t, context.Background(), fc, nil)
	if err != nil || sum.Skipped != 7 || fc.submits != 1 {
		t.Fatalf("rerun: %v %+v", err, sum)
	}
}

func TestOfflineSplitsByItemsAndBytes(t *testing.T) {
	t.Run("items", func(t *testing.T) {
		fx := newOfflineFixture(t, seqIDs(10)...)
		fc := &fakeBatches{endAfter: 1}
		if _, err, log := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.MaxItems = 3 }); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		sizes := []int{}
		for i := 1; i <= fc.submits; i++ {
			sizes = append(sizes, len(fc.jobs[fmt.Sprintf("fb_%d", i)].items))
		}
		if !slices.Equal(sizes, []int{3, 3, 3, 1}) {
			t.Errorf("batch sizes %v", sizes)
		}
		if n := len(readJSONL(t, fx.out)); n != 10 {
			t.Errorf("%d results", n)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		fx := newOfflineFixture(t, seqIDs(10)...)
		// A client limit; the fake rejects a batch over it, so a wrong
		// split would show up as a failure.
		fc := &fakeBatches{endAfter: 1}
		probe := &Source{Path: fx.in, Parser: Parser{Format: providers.FormatOpenAI}}
		var one int64
		probe.Each(func(r *providers.Request) error {
			one = max(one, fc.ItemSize(providers.BatchItem{CustomID: r.ID, Body: r.Body}))
			return nil
		})
		fc.maxBytes = 4*one + one/2 // four fit, five do not
		if _, err, log := fx.run(t, context.Background(), fc, nil); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		if fc.submits != 3 || len(fc.jobs["fb_1"].items) != 4 || len(fc.jobs["fb_3"].items) != 2 {
			t.Errorf("%d submits", fc.submits)
		}
	})
	t.Run("bytes counted under the id sent", func(t *testing.T) {
		// Long valid ids are sent as they are: sizing them as short mapped
		// ids would overfill the batch, which the fake rejects.
		ids := []string{"aaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaa2", "aaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaa4"}
		fx := newOfflineFixture(t, ids...)
		fc := &fakeBatches{endAfter: 1}
		probe := &Source{Path: fx.in, Parser: Parser{Format: providers.FormatOpenAI}}
		var one int64
		probe.Each(func(r *providers.Request) error {
			one = fc.ItemSize(providers.BatchItem{CustomID: r.ID, Body: r.Body})
			return nil
		})
		fc.maxBytes = 3*one - 10 // two fit; three would if sized under an 8-byte mapped id
		if _, err, log := fx.run(t, context.Background(), fc, nil); err != nil || fc.submits != 2 {
			t.Fatalf("%v, %d submits\n%s", err, fc.submits, log)
		}
	})
	t.Run("one item too large", func(t *testing.T) {
		fx := newOfflineFixture(t, "a", "b")
		fc := &fakeBatches{endAfter: 1}
		_, err, _ := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.MaxBytes = 20 })
		if !errors.Is(err, ErrFailures) {
			t.Fatalf("err %v", err)
		}
		errs := readJSONL(t, fx.errs)
		if errs["a"].Get("error.code").Str != "too_large_for_batch" || fc.submits != 0 {
			t.Errorf("errors %v, %d submits", errs, fc.submits)
		}
	})
}

func TestOfflineMapsRejectedIDs(t *testing.T) {
	ids := []string{"plain", "has space", "a/b", "llmrun-3", "a-very-long-custom-id-indeed"}
	fx := newOfflineFixture(t, ids...)
	fc := &fakeBatches{endAfter: 2}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sleeps{stopAt: 1, cancel: cancel}
	_, err, _ := fx.run(t, ctx, fc, func(c *OfflineConfig) { c.Sleep = sl.sleep })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	recs := openRecords(t, fx.out)
	if len(recs) != 1 || len(recs[0].Mapped) != 3 || !slices.Equal(recs[0].IDs, ids) {
		t.Fatalf("records %+v", recs)
	}
	// Line 4's own id is llmrun-3 and valid: the id mapped from line 3 must not take it.
	sent := map[string]bool{}
	for _, it := range fc.jobs["fb_1"].items {
		if sent[it.CustomID] {
			t.Fatalf("id %q sent twice", it.CustomID)
		}
		sent[it.CustomID] = true
	}
	if _, err, log := fx.run(t, context.Background(), fc, nil); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	lines := readJSONL(t, fx.out)
	for _, id := range ids {
		if !strings.HasPrefix(lines[id].Get("response.body.choices.0.message.content").Str, "answer ") {
			t.Errorf("%q: %s", id, lines[id].Raw)
		}
	}
	if len(lines) != len(ids) || fc.submits != 1 {
		t.Errorf("%d lines, %d submits", len(lines), fc.submits)
	}
}

func TestOfflineCrashDuringPollingResumesWithoutResubmitting(t *testing.T) {
	fx := newOfflineFixture(t, seqIDs(12)...)
	fc := &fakeBatches{endAfter: 4}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sleeps{stopAt: 2, cancel: cancel}
	sum, err, _ := fx.run(t, ctx, fc, func(c *OfflineConfig) { c.Sleep = sl.sleep; c.MaxItems = 5 })
	if !errors.Is(err, context.Canceled) || sum.Pending != 12 {
		t.Fatalf("err %v, summary %+v", err, sum)
	}
	if recs := openRecords(t, fx.out); len(recs) != 3 || fc.submits != 3 {
		t.Fatalf("%d records after %d submits", len(recs), fc.submits)
	}
	sum, err, log := fx.run(t, context.Background(), fc, nil)
	if err != nil || sum.Succeeded != 12 {
		t.Fatalf("rerun: %v %+v\n%s", err, sum, log)
	}
	if fc.submits != 3 || !strings.Contains(log.String(), "resuming 3 open batch(es)") {
		t.Errorf("%d submits; log:\n%s", fc.submits, log)
	}
	if recs := openRecords(t, fx.out); len(recs) != 0 {
		t.Errorf("records left %+v", recs)
	}
}

func TestOfflineInterruptLeavesBatchesOpen(t *testing.T) {
	fx := newOfflineFixture(t, seqIDs(3)...)
	fc := &fakeBatches{endAfter: 100}
	sig := make(chan os.Signal, 1)
	sl := &sleeps{}
	_, err, log := fx.run(t, context.Background(), fc, func(c *OfflineConfig) {
		c.Interrupts = sig
		c.Sleep = func(ctx context.Context, d time.Duration) bool {
			if len(sl.waits) == 1 {
				sig <- os.Interrupt
				<-ctx.Done()
			}
			return sl.sleep(ctx, d)
		}
	})
	var ie *InterruptedError
	if !errors.As(err, &ie) || len(fc.canceled) != 0 || !strings.Contains(log.String(), "still open") {
		t.Fatalf("err %v, canceled %v, log:\n%s", err, fc.canceled, log)
	}
	if len(openRecords(t, fx.out)) != 1 {
		t.Error("batch record lost")
	}
}

func TestOfflineExpiredAndFailedItems(t *testing.T) {
	fx := newOfflineFixture(t, seqIDs(8)...)
	fc := &fakeBatches{endAfter: 1, expire: true, fail: func(id string) bool { return id == "q001" }}
	sum, err, _ := fx.run(t, context.Background(), fc, nil)
	if !errors.Is(err, ErrFailures) || sum.Succeeded != 3 || sum.Failed != 5 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	out, errs := readJSONL(t, fx.out), readJSONL(t, fx.errs)
	for i, id := range fx.ids {
		switch {
		case id == "q001":
			if e := errs[id]; e.Get("error.code").Str != "server_error" || e.Get("response.status_code").Int() != 500 || e.Get("llmrun.mode").Str != "batch" {
				t.Errorf("%s: %s", id, e.Raw)
			}
		case i < 4:
			if !out[id].Exists() {
				t.Errorf("%s: succeeded result lost", id)
			}
		default:
			if e := errs[id]; e.Get("error.code").Str != "batch_expired" || e.Get("response").Type != gjson.Null || e.Get("llmrun.attempts").Int() != 0 {
				t.Errorf("%s: %s", id, e.Raw)
			}
		}
	}
	// A rerun in batch mode retries the failed and expired ones only.
	fc.expire, fc.fail = false, nil
	sum, err, _ = fx.run(t, context.Background(), fc, nil)
	if err != nil || sum.Succeeded != 5 || sum.Skipped != 3 || len(fc.jobs["fb_2"].items) != 5 {
		t.Fatalf("rerun: %v %+v", err, sum)
	}
	if n := len(readJSONL(t, fx.errs)); n != 0 {
		t.Errorf("%d error lines left", n)
	}
}

func TestOfflinePollBackoffIsCapped(t *testing.T) {
	fx := newOfflineFixture(t, "a")
	fc := &fakeBatches{endAfter: 9}
	sl := &sleeps{}
	if _, err, _ := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.Sleep = sl.sleep }); err != nil {
		t.Fatal(err)
	}
	s := time.Second
	want := []time.Duration{s, 3 * s / 2, 9 * s / 4, 27 * s / 8, 4 * s, 4 * s, 4 * s, 4 * s, 4 * s} // one wait before each of the 9 polls
	if !slices.Equal(sl.waits, want) {
		t.Errorf("waits %v, want %v", sl.waits, want)
	}
}

func TestOfflineSubmitFailures(t *testing.T) {
	t.Run("answered 5xx is retried", func(t *testing.T) {
		fx := newOfflineFixture(t, "a", "b")
		fc := &fakeBatches{endAfter: 1, submitErrs: []error{&providers.Error{Class: providers.ClassServer, Status: 500}}}
		if _, err, log := fx.run(t, context.Background(), fc, nil); err != nil || fc.submits != 1 {
			t.Fatalf("%v, %d submits\n%s", err, fc.submits, log)
		}
	})
	t.Run("retries follow the policy", func(t *testing.T) {
		// Backoff from PollInterval (1s), doubling; a retry-after hint is a
		// floor (plus its jitter allowance); the third answered failure is
		// the last.
		e5 := &providers.Error{Class: providers.ClassServer, Status: 500}
		e429 := &providers.Error{Class: providers.ClassRateLimited, Status: 429, RetryAfter: 3 * time.Second, HasRetryAfter: true}
		fx := newOfflineFixture(t, "a", "b")
		fc := &fakeBatches{endAfter: 1, submitErrs: []error{e5, e429}}
		sl := &sleeps{}
		if _, err, log := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.Sleep = sl.sleep }); err != nil || fc.submits != 1 {
			t.Fatalf("%v, %d submits\n%s", err, fc.submits, log)
		}
		if want := []time.Duration{time.Second, 3*time.Second + 300*time.Millisecond}; !slices.Equal(sl.waits[:2], want) {
			t.Errorf("waits %v, want %v first", sl.waits, want)
		}
		fx = newOfflineFixture(t, "a")
		fc = &fakeBatches{endAfter: 1, submitErrs: []error{e5, e5, e5, e5}}
		_, err, _ := fx.run(t, context.Background(), fc, nil)
		var ae *AbortError
		if !errors.As(err, &ae) || len(fc.submitErrs) != 1 || fc.submits != 0 {
			t.Fatalf("err %v, %d errors left", err, len(fc.submitErrs))
		}
	})
	t.Run("no answer is not retried", func(t *testing.T) {
		fx := newOfflineFixture(t, "a", "b")
		fc := &fakeBatches{endAfter: 1, submitErrs: []error{&providers.Error{Class: providers.ClassNetwork, Message: "connection reset"}}}
		_, err, _ := fx.run(t, context.Background(), fc, nil)
		var ae *AbortError
		if !errors.As(err, &ae) || fc.submits != 0 || len(fc.submitErrs) != 0 {
			t.Fatalf("err %v, %d submits", err, fc.submits)
		}
		if n := len(readJSONL(t, fx.errs)); n != 0 {
			t.Errorf("%d errors lines: requests must stay pending", n)
		}
	})
	t.Run("auth aborts", func(t *testing.T) {
		fx := newOfflineFixture(t, "a")
		fc := &fakeBatches{submitErrs: []error{&providers.Error{Class: providers.ClassAuth, Status: 401}}}
		_, err, _ := fx.run(t, context.Background(), fc, nil)
		var ae *AbortError
		if !errors.As(err, &ae) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("refused batch fails its requests", func(t *testing.T) {
		fx := newOfflineFixture(t, "a")
		fc := &fakeBatches{submitErrs: []error{&providers.Error{Class: providers.ClassInvalid, Status: 400, Message: "nope"}}}
		_, err, _ := fx.run(t, context.Background(), fc, nil)
		if !errors.Is(err, ErrFailures) || readJSONL(t, fx.errs)["a"].Get("error.code").Str != "batch_rejected" {
			t.Fatalf("err %v", err)
		}
	})
}

func TestOfflineUnknownBatchIsForgotten(t *testing.T) {
	fx := newOfflineFixture(t, "a", "b")
	fc := &fakeBatches{endAfter: 5}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sleeps{stopAt: 1, cancel: cancel}
	fx.run(t, ctx, fc, func(c *OfflineConfig) { c.Sleep = sl.sleep })
	fc.forget = true
	_, err, log := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.NoWait = true })
	if err != nil || !strings.Contains(log.String(), "unknown to fake") {
		t.Fatalf("%v\n%s", err, log)
	}
	// Forgotten, its requests were submitted again in a new batch.
	if fc.submits != 2 {
		t.Errorf("%d submits", fc.submits)
	}
}

func TestOfflineCollectOnlyAndProviderMismatch(t *testing.T) {
	fx := newOfflineFixture(t, "a", "b")
	fc := &fakeBatches{endAfter: 1}
	sum, err, _ := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.CollectOnly = true })
	if err != nil || fc.submits != 0 || sum.Pending != 2 {
		t.Fatalf("%v %+v", err, sum)
	}
	st, _ := checkpoint.Open(checkpoint.Options{Output: fx.out, Errors: fx.errs})
	b, _ := json.Marshal(BatchRecord{ID: "x", Provider: "other", IDs: []string{"a"}})
	st.SetState(batchStatePrefix+"x", b)
	st.Close()
	_, err, _ = fx.run(t, context.Background(), fc, nil)
	var ae *AbortError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "--provider other") {
		t.Fatalf("err %v", err)
	}
}

// TestOfflineRecordsHoldNoURLCredentials: a base URL with userinfo never
// reaches the state file, from this run or from a record an older llmrun
// wrote; resuming still works (the credentials come from the client).
func TestOfflineRecordsHoldNoURLCredentials(t *testing.T) {
	fx := newOfflineFixture(t, "a", "b")
	fc := &fakeBatches{endAfter: 3, base: "http://user:s3cret-pass@fake:8080/v1"}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sleeps{stopAt: 1, cancel: cancel}
	fx.run(t, ctx, fc, func(c *OfflineConfig) { c.Sleep = sl.sleep })
	raw, err := os.ReadFile(fx.out + ".state.json")
	if err != nil {
		t.Fatal(err)
	}
	recs := openRecords(t, fx.out)
	if bytes.Contains(raw, []byte("s3cret")) || bytes.Contains(raw, []byte("user:")) || len(recs) != 1 || recs[0].BaseURL != "http://fake:8080/v1" {
		t.Fatalf("records %+v; state file:\n%s", recs, raw)
	}

	// A record from before the fix is scrubbed by the next run.
	st, err := checkpoint.Open(checkpoint.Options{Output: fx.out, Errors: fx.errs})
	if err != nil {
		t.Fatal(err)
	}
	old := recs[0]
	old.BaseURL = "http://user:0ld-pass@fake:8080/v1"
	b, _ := json.Marshal(old)
	st.SetState(batchStatePrefix+old.ID, b)
	st.Close()
	if _, err, log := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.NoWait = true }); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	raw, _ = os.ReadFile(fx.out + ".state.json")
	if bytes.Contains(raw, []byte("0ld-pass")) {
		t.Fatalf("old credentials kept:\n%s", raw)
	}
	if sum, err, log := fx.run(t, context.Background(), fc, nil); err != nil || sum.Succeeded != 2 {
		t.Fatalf("%v %+v\n%s", err, sum, log)
	}
}
