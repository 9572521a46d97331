package offline

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
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/source"
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
	// noLabels makes the fake keep no labels, like Anthropic.
	noLabels bool
	// lost makes the next Submit calls create the batch and then fail
	// without an answer, as a crash or a lost connection would.
	lost int
	// listErr fails List.
	listErr error
	// clock stamps created batches; nil means time.Now.
	clock *fakeClock

	submits  int
	jobs     map[string]*fakeJob
	polls    int
	lists    int
	canceled []string
	labels   []providers.BatchLabel // as passed to Submit
	reads    int                    // SentIDs calls
}

type fakeJob struct {
	seq      int
	items    []providers.BatchItem
	polls    int
	canceled bool
	label    providers.BatchLabel
	created  time.Time
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
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
	return id != "" && !strings.ContainsAny(id, " /") && len(id) <= 24
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

func (f *fakeBatches) Labels() bool { return !f.noLabels }

func (f *fakeBatches) Submit(ctx context.Context, items []providers.BatchItem, label providers.BatchLabel) (providers.BatchJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.labels = append(f.labels, label)
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
	j := &fakeJob{seq: f.submits, items: slices.Clone(items), created: time.Now()}
	if f.clock != nil {
		j.created = f.clock.Now()
	}
	if !f.noLabels {
		j.label = providers.BatchLabel{Job: label.Job, Tag: label.Tag, Input: label.Input}
	}
	f.jobs[id] = j
	if f.lost > 0 {
		f.lost--
		return providers.BatchJob{}, &providers.Error{Class: providers.ClassNetwork, Message: "connection reset"}
	}
	return providers.BatchJob{ID: id, Status: "validating", Total: len(items), Created: j.created, Label: j.label}, nil
}

func (f *fakeBatches) List(ctx context.Context, since time.Time) ([]providers.BatchJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []providers.BatchJob
	for id, j := range f.jobs {
		if !j.created.Before(since) {
			out = append(out, f.view(id, j))
		}
	}
	slices.SortFunc(out, func(a, b providers.BatchJob) int { return f.jobs[b.ID].seq - f.jobs[a.ID].seq })
	return out, nil
}

func (f *fakeBatches) SentIDs(ctx context.Context, job providers.BatchJob, fn func(string) error) error {
	if f.noLabels {
		return fmt.Errorf("fake: %w", errors.ErrUnsupported)
	}
	f.mu.Lock()
	f.reads++
	items := slices.Clone(f.jobs[job.ID].items)
	f.mu.Unlock()
	for _, it := range items {
		if err := fn(it.CustomID); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeBatches) view(id string, j *fakeJob) providers.BatchJob {
	job := providers.BatchJob{ID: id, Status: "in_progress", Total: len(j.items), Created: j.created, Label: j.label}
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
//
//lint:ignore ST1008 the tests take summary, error and log in the order they check them
func (fx *offlineFixture) run(t *testing.T, ctx context.Context, fc *fakeBatches, mod func(*OfflineConfig)) (*report.Summary, error, *bytes.Buffer) {
	t.Helper()
	src := &source.Source{Path: fx.in, Parser: source.Parser{Format: providers.FormatOpenAI}}
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
		probe := &source.Source{Path: fx.in, Parser: source.Parser{Format: providers.FormatOpenAI}}
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
	t.Run("one model per batch", func(t *testing.T) {
		// Gemini's batch names one model (OpenAI's file takes one too):
		// the models interleaved in the input go to a batch each.
		fx := newOfflineFixture(t)
		var b bytes.Buffer
		for i := range 6 {
			line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint("m", i), "prompt": "q", "model": fmt.Sprint("model-", i%2)})
			b.Write(append(line, '\n'))
		}
		if err := os.WriteFile(fx.in, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		fc := &fakeBatches{endAfter: 1}
		if _, err, log := fx.run(t, context.Background(), fc, nil); err != nil || fc.submits != 2 {
			t.Fatalf("%v, %d submits\n%s", err, fc.submits, log)
		}
		for id, j := range fc.jobs {
			models := map[string]bool{}
			for _, it := range j.items {
				models[gjson.GetBytes(it.Body, "model").Str] = true
			}
			if len(j.items) != 3 || len(models) != 1 {
				t.Errorf("%s: %d items of models %v", id, len(j.items), models)
			}
		}
	})
	t.Run("bytes counted under the id sent", func(t *testing.T) {
		// Long valid ids are sent as they are: sizing them as short mapped
		// ids would overfill the batch, which the fake rejects.
		ids := []string{"aaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaa2", "aaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaa4"}
		fx := newOfflineFixture(t, ids...)
		fc := &fakeBatches{endAfter: 1}
		probe := &source.Source{Path: fx.in, Parser: source.Parser{Format: providers.FormatOpenAI}}
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
		if !errors.Is(err, ending.ErrFailures) {
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
	var ie *ending.InterruptedError
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
	if !errors.Is(err, ending.ErrFailures) || sum.Succeeded != 3 || sum.Failed != 5 {
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
		var ae *ending.AbortError
		if !errors.As(err, &ae) || len(fc.submitErrs) != 1 || fc.submits != 0 {
			t.Fatalf("err %v, %d errors left", err, len(fc.submitErrs))
		}
	})
	t.Run("no answer is not retried", func(t *testing.T) {
		fx := newOfflineFixture(t, "a", "b")
		fc := &fakeBatches{endAfter: 1, submitErrs: []error{&providers.Error{Class: providers.ClassNetwork, Message: "connection reset"}}}
		_, err, _ := fx.run(t, context.Background(), fc, nil)
		var ae *ending.AbortError
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
		var ae *ending.AbortError
		if !errors.As(err, &ae) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("refused batch fails its requests", func(t *testing.T) {
		fx := newOfflineFixture(t, "a")
		fc := &fakeBatches{submitErrs: []error{&providers.Error{Class: providers.ClassInvalid, Status: 400, Message: "nope"}}}
		_, err, _ := fx.run(t, context.Background(), fc, nil)
		if !errors.Is(err, ending.ErrFailures) || readJSONL(t, fx.errs)["a"].Get("error.code").Str != "batch_rejected" {
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
	var ae *ending.AbortError
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

// intents returns the intents recorded in the checkpoint at out.
func intents(t *testing.T, out string) []BatchRecord {
	t.Helper()
	var in []BatchRecord
	for _, r := range openRecords(t, out) {
		if r.ID == "" {
			in = append(in, r)
		}
	}
	return in
}

// TestOfflineCreateWithoutAnswerIsAdoptedByTag: a create call that created
// the batch but never got its answer leaves an intent; the rerun finds the
// batch by its tag and collects it instead of creating a second one.
func TestOfflineCreateWithoutAnswerIsAdoptedByTag(t *testing.T) {
	fx := newOfflineFixture(t, seqIDs(5)...)
	fc := &fakeBatches{endAfter: 1, lost: 1}
	_, err, _ := fx.run(t, context.Background(), fc, nil)
	var ae *ending.AbortError
	in := intents(t, fx.out)
	if !errors.As(err, &ae) || fc.submits != 1 || len(in) != 1 || in[0].Tag == "" || len(in[0].IDs) != 5 || in[0].Input != "in.jsonl" {
		t.Fatalf("err %v, %d batches, intents %+v", err, fc.submits, in)
	}
	if l := fc.labels[0]; l.Tag != in[0].Tag || l.Job != jobOf(fx.out) || l.Input != "in.jsonl" || l.Resume {
		t.Errorf("label %+v", l)
	}
	sum, err, log := fx.run(t, context.Background(), fc, nil)
	if err != nil || sum.Succeeded != 5 || fc.submits != 1 || !strings.Contains(log.String(), "found batch fb_1") {
		t.Fatalf("rerun: %v %+v, %d batches\n%s", err, sum, fc.submits, log)
	}
	if recs := openRecords(t, fx.out); len(recs) != 0 {
		t.Errorf("records left %+v", recs)
	}
}

// TestOfflineCreateNeverMadeIsRetriedAfterGrace: an intent whose batch the
// provider does not show, even after the grace, is dropped and its requests
// are submitted again, once, marked Resume (reuse what the attempt left).
func TestOfflineCreateNeverMadeIsRetriedAfterGrace(t *testing.T) {
	fx := newOfflineFixture(t, seqIDs(4)...)
	clk := newFakeClock()
	fc := &fakeBatches{endAfter: 1, clock: clk, submitErrs: []error{&providers.Error{Class: providers.ClassTimeout, Message: "no answer"}}}
	at := func(c *OfflineConfig) { c.Now = clk.Now }
	if _, err, _ := fx.run(t, context.Background(), fc, at); err == nil || len(intents(t, fx.out)) != 1 {
		t.Fatalf("err %v", err)
	}
	clk.Advance(20 * time.Second)
	sl := &sleeps{}
	sum, err, log := fx.run(t, context.Background(), fc, func(c *OfflineConfig) {
		at(c)
		c.Sleep = func(ctx context.Context, d time.Duration) bool { clk.Advance(d); return sl.sleep(ctx, d) }
	})
	if err != nil || sum.Succeeded != 4 || fc.submits != 1 || fc.lists != 3 { // one in the first run, two in the rerun
		t.Fatalf("rerun: %v %+v, %d batches, %d lists\n%s", err, sum, fc.submits, fc.lists, log)
	}
	if len(sl.waits) == 0 || sl.waits[0] != 40*time.Second || !fc.labels[len(fc.labels)-1].Resume {
		t.Errorf("waits %v (want the 40s left of the grace first), labels %+v", sl.waits, fc.labels)
	}
}

// TestOfflineCreateRepeatedIsCancelled: two batches carry the intent's tag
// (a create that landed late): the oldest is kept, the other cancelled.
func TestOfflineCreateRepeatedIsCancelled(t *testing.T) {
	fx := newOfflineFixture(t, seqIDs(3)...)
	fc := &fakeBatches{endAfter: 1, lost: 2}
	fx.run(t, context.Background(), fc, nil)
	fc.Submit(context.Background(), fc.jobs["fb_1"].items, fc.labels[0])
	sum, err, log := fx.run(t, context.Background(), fc, nil)
	if err != nil || sum.Succeeded != 3 || !slices.Equal(fc.canceled, []string{"fb_2"}) || fc.submits != 2 {
		t.Fatalf("%v %+v cancelled %v\n%s", err, sum, fc.canceled, log)
	}
}

// TestOfflineCreateWithoutLabelsIsVerifiedByResults: without labels the
// rerun adopts every batch of the intent's size from around its time, and
// collects only the one whose results hold the tagged custom_id: another
// job's batch over the same ids (another output of the same input) is left
// alone.
func TestOfflineCreateWithoutLabelsIsVerifiedByResults(t *testing.T) {
	foreign := func(fc *fakeBatches, items []providers.BatchItem) {
		other := make([]providers.BatchItem, len(items))
		for i, it := range items {
			other[i] = providers.BatchItem{CustomID: fmt.Sprintf("q%03d", i), Body: bytes.Replace(it.Body, []byte(`"m1"`), []byte(`"m2"`), 1)}
		}
		fc.Submit(context.Background(), other, providers.BatchLabel{})
	}
	check := func(t *testing.T, fx *offlineFixture, sum *report.Summary, err error, log *bytes.Buffer) {
		t.Helper()
		lines := readJSONL(t, fx.out)
		if err != nil || sum.Succeeded != 4 || len(lines) != 4 || !strings.Contains(log.String(), "is not this run's") {
			t.Fatalf("%v %+v\n%s", err, sum, log)
		}
		for id, l := range lines {
			if l.Get("llmrun.model").Str != "m1" {
				t.Errorf("%s: another job's answer collected: %s", id, l.Raw)
			}
		}
		if recs := openRecords(t, fx.out); len(recs) != 0 {
			t.Errorf("records left %+v", recs)
		}
	}
	t.Run("created", func(t *testing.T) {
		fx := newOfflineFixture(t, seqIDs(4)...)
		clk := newFakeClock()
		fc := &fakeBatches{endAfter: 1, lost: 1, noLabels: true, clock: clk}
		at := func(c *OfflineConfig) { c.Now = clk.Now }
		fx.run(t, context.Background(), fc, at)
		if it := fc.jobs["fb_1"].items[0]; it.CustomID != tagItemID(intents(t, fx.out)[0].Tag) {
			t.Fatalf("first item sent as %q", it.CustomID)
		}
		clk.Advance(time.Second)
		foreign(fc, fc.jobs["fb_1"].items)
		clk.Advance(2 * time.Minute)
		sum, err, log := fx.run(t, context.Background(), fc, at)
		check(t, fx, sum, err, log)
		if fc.submits != 2 || !strings.Contains(log.String(), "batch fb_1 proved this run's") {
			t.Errorf("%d batches\n%s", fc.submits, log)
		}
	})
	t.Run("never created", func(t *testing.T) {
		fx := newOfflineFixture(t, seqIDs(4)...)
		clk := newFakeClock()
		fc := &fakeBatches{endAfter: 1, noLabels: true, clock: clk, submitErrs: []error{&providers.Error{Class: providers.ClassNetwork, Message: "reset"}}}
		at := func(c *OfflineConfig) { c.Now = clk.Now }
		fx.run(t, context.Background(), fc, at)
		clk.Advance(time.Second)
		probe := &source.Source{Path: fx.in, Parser: source.Parser{Format: providers.FormatOpenAI}}
		var items []providers.BatchItem
		probe.Each(func(r *providers.Request) error {
			items = append(items, providers.BatchItem{CustomID: r.ID, Body: r.Body})
			return nil
		})
		foreign(fc, items)
		clk.Advance(2 * time.Minute)
		sum, err, log := fx.run(t, context.Background(), fc, at)
		check(t, fx, sum, err, log)
		if fc.submits != 2 {
			t.Errorf("%d batches (want the foreign one and ours)\n%s", fc.submits, log)
		}
	})
}

// TestOfflineStateFileLostAdoptsLabelledBatches: with the state file
// deleted while batches are open, the rerun finds them by this output's
// label, learns their requests (mapped ids included) and collects them; a
// later rerun does not read them again.
func TestOfflineStateFileLostAdoptsLabelledBatches(t *testing.T) {
	ids := []string{"a", "has space", "c", "d/e", "f", "g", "h"}
	fx := newOfflineFixture(t, ids...)
	fc := &fakeBatches{endAfter: 3}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sleeps{stopAt: 1, cancel: cancel}
	fx.run(t, ctx, fc, func(c *OfflineConfig) { c.Sleep = sl.sleep; c.MaxItems = 3 })
	if fc.submits != 3 {
		t.Fatalf("%d batches", fc.submits)
	}
	if err := os.Remove(fx.out + ".state.json"); err != nil {
		t.Fatal(err)
	}
	sum, err, log := fx.run(t, context.Background(), fc, func(c *OfflineConfig) { c.MaxItems = 3 })
	if err != nil || sum.Succeeded != int64(len(ids)) || fc.submits != 3 || strings.Count(log.String(), "is not in its state file") != 3 {
		t.Fatalf("%v %+v, %d batches\n%s", err, sum, fc.submits, log)
	}
	lines := readJSONL(t, fx.out)
	for _, id := range ids {
		if lines[id].Get("response.body.choices.0.message.content").Str == "" {
			t.Errorf("%q: %s", id, lines[id].Raw)
		}
	}
	reads := fc.reads
	if sum, err, _ := fx.run(t, context.Background(), fc, nil); err != nil || sum.Skipped != int64(len(ids)) || fc.reads != reads {
		t.Errorf("second rerun: %v %+v, %d input files read again", err, sum, fc.reads-reads)
	}
	// Lost again after everything was collected: read once, nothing adopted.
	os.Remove(fx.out + ".state.json")
	if sum, err, log := fx.run(t, context.Background(), fc, nil); err != nil || sum.Skipped != int64(len(ids)) || fc.submits != 3 || strings.Contains(log.String(), "adopting") {
		t.Errorf("after collection: %v %+v\n%s", err, sum, log)
	}
}

// TestOfflineIntentOfRecordedBatchIsDropped: a crash between recording the
// batch and removing its intent leaves both; the rerun drops the intent.
func TestOfflineIntentOfRecordedBatchIsDropped(t *testing.T) {
	fx := newOfflineFixture(t, "a", "b")
	fc := &fakeBatches{endAfter: 5}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sleeps{stopAt: 1, cancel: cancel}
	fx.run(t, ctx, fc, func(c *OfflineConfig) { c.Sleep = sl.sleep })
	rec := openRecords(t, fx.out)[0]
	rec.ID = ""
	st, _ := checkpoint.Open(checkpoint.Options{Output: fx.out, Errors: fx.errs})
	b, _ := json.Marshal(rec)
	st.SetState(rec.key(), b)
	st.Close()
	if n := len(openRecords(t, fx.out)); n != 2 {
		t.Fatalf("%d records", n)
	}
	sum, err, log := fx.run(t, context.Background(), fc, nil)
	if err != nil || sum.Succeeded != 2 || fc.submits != 1 || len(openRecords(t, fx.out)) != 0 {
		t.Fatalf("%v %+v\n%s", err, sum, log)
	}
}

// TestOfflineListFailure: without the list an intent stays, its requests
// are not submitted again, and the rest runs; an auth failure stops.
func TestOfflineListFailure(t *testing.T) {
	fx := newOfflineFixture(t, "a", "b", "c")
	fc := &fakeBatches{endAfter: 1, lost: 1, maxItems: 2}
	fx.run(t, context.Background(), fc, nil)
	fc.listErr = &providers.Error{Class: providers.ClassServer, Status: 500}
	sum, err, log := fx.run(t, context.Background(), fc, nil)
	if err != nil || sum.Succeeded != 1 || fc.submits != 2 || len(intents(t, fx.out)) != 1 || !strings.Contains(log.String(), "stay unresolved") {
		t.Fatalf("%v %+v, %d batches\n%s", err, sum, fc.submits, log)
	}
	fc.listErr = &providers.Error{Class: providers.ClassAuth, Status: 401}
	_, err, _ = fx.run(t, context.Background(), fc, nil)
	var ae *ending.AbortError
	if !errors.As(err, &ae) {
		t.Fatalf("auth: %v", err)
	}
	fc.listErr = nil
	if sum, err, _ := fx.run(t, context.Background(), fc, nil); err != nil || sum.Succeeded != 2 || fc.submits != 2 {
		t.Fatalf("%v %+v", err, sum)
	}
}
