package offline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/internal/ctxsleep"
	"github.com/llmrun/llmrun/output"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/source"
)

// The offline route: the same input, output and errors files as Run, but
// the requests go through the provider's batch API (half price, results
// within 24 h, outside the synchronous rate limits).
//
// Resumability without double spending rests on one rule: a batch's id and
// the custom_ids in it are recorded in the checkpoint's sidecar state
// (SetState, durable) right after the provider created it and before it is
// polled. A rerun finds the open batches there, resumes polling and
// collecting them, and never submits a request that sits in one of them. A
// batch's record is dropped only once every one of its results is in the
// output or errors file. The window between the create call and that
// record is covered by an intent recorded before the call
// (offline_create.go).

// batchStatePrefix starts the sidecar state key of each open batch and
// intent.
const batchStatePrefix = "batch:"

// BatchRecord is what the sidecar state keeps about one open batch, or
// about an intent: a batch that was being created when a run stopped,
// which may or may not exist at the provider until a run looks.
type BatchRecord struct {
	// ID is the provider's batch id; "" in an intent.
	ID       string `json:"id"`
	Provider string `json:"provider"`
	// BaseURL is where the batch was created, without userinfo: the state
	// file holds no credentials (a rerun takes them from its flags or
	// environment again).
	BaseURL string    `json:"base_url"`
	Created time.Time `json:"created"`
	// IDs are the input custom_ids in the batch.
	IDs []string `json:"ids"`
	// Mapped maps the ids sent in place of custom_ids the provider would
	// reject back to those custom_ids.
	Mapped map[string]string `json:"mapped,omitempty"`
	// Tag names the intent the batch was created for (its label at the
	// provider, see providers.BatchLabel).
	Tag string `json:"tag,omitempty"`
	// Input is the input file's name, as labelled.
	Input string `json:"input,omitempty"`
	// Unverified marks a batch adopted by its size and creation time only
	// (a provider without labels): its results are read only once they
	// prove it ours.
	Unverified bool `json:"unverified,omitempty"`

	dropped bool // another candidate for the same intent proved ours
}

// OpenBatches returns the open batches and intents (ID "") recorded in a
// sidecar state (Store state or checkpoint.StatusReport.State), oldest
// first.
func OpenBatches(state map[string]json.RawMessage) ([]BatchRecord, error) {
	var recs []BatchRecord
	for k, v := range state {
		if !strings.HasPrefix(k, batchStatePrefix) {
			continue
		}
		var r BatchRecord
		if err := json.Unmarshal(v, &r); err != nil || r.ID == "" && r.Tag == "" {
			return nil, fmt.Errorf("state entry %q is not a batch record: %v", k, err)
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b BatchRecord) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	return recs, nil
}

// StoreState returns the store's whole sidecar state.
func StoreState(st *checkpoint.Store) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage)
	for _, k := range st.StateKeys() {
		if v, ok := st.State(k); ok {
			m[k] = v
		}
	}
	return m
}

// OfflineConfig is everything one offline run needs.
type OfflineConfig struct {
	// Source is the input; nil collects the open batches only.
	Source *source.Source
	// Total is the number of requests in the source (from Source.Check).
	Total  int
	Client providers.BatchClient
	Store  *checkpoint.Store

	// MaxItems and MaxBytes, when positive, cap a batch below the client's
	// limits.
	MaxItems int
	MaxBytes int64
	// CollectOnly collects the open batches and submits nothing.
	CollectOnly bool
	// NoWait makes one pass over the open batches (collecting those that
	// ended) instead of polling until all have ended.
	NoWait bool

	// PollInterval is the first wait between polling rounds; each round
	// without news waits half as long again, up to PollMax. Defaults: 15s
	// and 5m.
	PollInterval, PollMax time.Duration
	// Sleep waits d, reporting false if ctx ended first; nil uses a timer.
	Sleep func(ctx context.Context, d time.Duration) bool
	// Now stamps batch records and intents and ages them (how long a
	// batch took, whether an interrupted create is still within
	// CreateGrace); nil means time.Now.
	Now func() time.Time
	// Log receives progress and notes, one line each; nil discards them.
	Log io.Writer
	// Interrupts delivers SIGINT/SIGTERM: polling stops at once (the
	// batches keep running at the provider, and a rerun collects them).
	Interrupts <-chan os.Signal
	// Prices prices every result at the provider's batch price; nil
	// computes no costs.
	Prices *pricing.Table
	// CreateGrace is how long after an interrupted create call a rerun
	// keeps looking for its batch; 0 means DefaultCreateGrace.
	CreateGrace time.Duration
}

// Default polling of RunOffline.
const (
	DefaultPollInterval = 15 * time.Second
	DefaultPollMax      = 5 * time.Minute
)

// submitTimeout bounds one create call (an upload of up to 200 MB for
// OpenAI), which a stop does not interrupt.
const submitTimeout = 30 * time.Minute

type offline struct {
	cfg     OfflineConfig
	c       *report.Counters
	open    []*BatchRecord
	intents []*BatchRecord
	inBat   map[string]int  // input ids in open batches and intents, by how many hold them
	wrote   map[string]bool // ids written by this run
	last    map[string]string

	job, input string // the label's job and input name
	// resume: an intent was found never created; the next creates may
	// reuse what it left at the provider.
	resume bool
	// released: requests left a batch without results (an unknown batch,
	// one not ours); they are submitted again.
	released bool
	// readSource: the source has been read once (skipped and kept-failed
	// requests are counted on the first read only).
	readSource bool

	maxItems int
	maxBytes int64
}

// RunOffline runs the batch through the provider's batch API: it collects
// the batches a previous run left open, splits the pending requests into
// batches within the limits, records each batch before polling it, polls
// with capped backoff, and appends every result to the checkpoint as it is
// read (succeeded to the output, the rest to the errors file).
//
// It returns the summary and an error that says how the run ended: nil,
// ending.ErrFailures (some requests failed, expired or were cancelled: they are in
// the errors file), *ending.AbortError (auth, quota), *ending.InterruptedError or
// ctx.Err() (the open batches stay recorded; rerun to collect them), or an
// I/O error.
func RunOffline(ctx context.Context, cfg OfflineConfig) (*report.Summary, error) {
	started := time.Now()
	o := newOffline(cfg)
	cfg = o.cfg // with its defaults
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if cfg.Interrupts != nil {
		go func() {
			select {
			case sig := <-cfg.Interrupts:
				stop(&ending.InterruptedError{Signal: sig})
			case <-ctx.Done():
			}
		}()
	}

	err := o.run(ctx)
	if ferr := cfg.Store.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("writing results: %w", ferr)
	}
	sum := o.c.Summary(time.Since(started))
	if cfg.Prices != nil {
		sum.PricesDate = cfg.Prices.Date()
	}
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if len(o.open) > 0 && (err != nil || cfg.NoWait) {
		fmt.Fprintf(cfg.Log, "llmrun: %d batch(es) still open at %s; they keep running there: rerun the same command to collect them, or `llmrun cancel` the output to stop them\n",
			len(o.open), cfg.Client.Name())
	}
	var ie *ending.InterruptedError
	switch {
	case errors.As(err, &ie):
		return sum, ie
	case err != nil:
		var ae *ending.AbortError
		if errors.As(err, &ae) {
			sum.Aborted = ae.Cause.Error()
		}
		return sum, err
	case o.c.Failed.Load() > 0:
		return sum, ending.ErrFailures
	}
	return sum, nil
}

// newOffline fills cfg's defaults and sizes batches within both the
// client's limits and cfg's caps.
func newOffline(cfg OfflineConfig) *offline {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = ctxsleep.For
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.PollMax < cfg.PollInterval {
		cfg.PollMax = max(DefaultPollMax, cfg.PollInterval)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.CreateGrace <= 0 {
		cfg.CreateGrace = DefaultCreateGrace
	}
	o := &offline{cfg: cfg, c: new(report.Counters), inBat: map[string]int{}, wrote: map[string]bool{}, last: map[string]string{},
		job: jobOf(cfg.Store.Output())}
	if cfg.Source != nil {
		o.input = filepath.Base(cfg.Source.Path)
	}
	o.maxItems, o.maxBytes = cfg.Client.MaxItems(), cfg.Client.MaxBytes()
	if cfg.MaxItems > 0 {
		o.maxItems = min(o.maxItems, cfg.MaxItems)
	}
	if cfg.MaxBytes > 0 {
		o.maxBytes = min(o.maxBytes, cfg.MaxBytes)
	}
	o.c.Total.Store(int64(cfg.Total))
	return o
}

func (o *offline) run(ctx context.Context) error {
	if err := o.load(); err != nil {
		return err
	}
	if err := o.recoverCreates(ctx); err != nil {
		return err
	}
	if len(o.open) > 0 {
		o.logf("resuming %d open batch(es) recorded in the checkpoint (%d requests); they are not resubmitted", len(o.open), len(o.inBat))
	}
	// Collect what has ended before submitting anything new.
	if err := o.pollRound(ctx); err != nil {
		return err
	}
	if err := o.submitPending(ctx); err != nil {
		return err
	}
	delay := o.cfg.PollInterval
	for len(o.open) > 0 && !o.cfg.NoWait {
		if !o.cfg.Sleep(ctx, delay) {
			return context.Cause(ctx)
		}
		n := o.c.Done()
		if err := o.pollRound(ctx); err != nil {
			return err
		}
		if err := o.submitPending(ctx); err != nil {
			return err
		}
		if o.c.Done() != n {
			delay = o.cfg.PollInterval
		} else {
			delay = min(delay+delay/2, o.cfg.PollMax)
		}
	}
	return nil
}

// load reads the open batches and intents from the sidecar state.
func (o *offline) load() error {
	recs, err := OpenBatches(StoreState(o.cfg.Store))
	if err != nil {
		return err
	}
	cl := o.cfg.Client
	for i := range recs {
		r := &recs[i]
		what := "batch " + r.ID
		if r.ID == "" {
			what = "a batch being created (tag " + r.Tag + ")"
		}
		if r.Provider != cl.Name() {
			return &ending.AbortError{Cause: fmt.Errorf("%s is open at provider %s, not %s: rerun with --provider %s, or `llmrun cancel` it", what, r.Provider, cl.Name(), r.Provider)}
		}
		if err := o.scrub(r); err != nil {
			return err
		}
		if base := providers.StripUserinfo(cl.BaseURL()); r.BaseURL != base {
			o.logf("note: %s was created at %s; looking for it at %s", what, r.BaseURL, base)
		}
		if r.ID == "" {
			o.intents = append(o.intents, r)
		} else {
			o.open = append(o.open, r)
		}
		o.hold(r)
	}
	return o.pruneCollected()
}

// scrub rewrites a record an older llmrun stored with credentials in its
// base URL, so that they leave the disk at the next run.
func (o *offline) scrub(r *BatchRecord) error {
	clean := providers.StripUserinfo(r.BaseURL)
	if clean == r.BaseURL {
		return nil
	}
	r.BaseURL = clean
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return o.cfg.Store.SetState(r.key(), b)
}

func (o *offline) logf(format string, args ...any) {
	fmt.Fprintf(o.cfg.Log, "llmrun: "+format+"\n", args...)
}

// submitPending streams the source and submits the pending requests (not
// done, not failed-and-kept, not in an open batch) in batches within the
// limits.
func (o *offline) submitPending(ctx context.Context) error {
	if o.cfg.Source == nil || o.cfg.CollectOnly || (o.readSource && !o.released) {
		return nil
	}
	first := !o.readSource
	o.readSource, o.released = true, false
	b := &batcher{o: o, groups: map[batchKey]*batchGroup{}}
	err := o.cfg.Source.Each(func(req *providers.Request) error {
		if !o.pending(req, first) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		// Size the item under the id it will be sent as (room left for the
		// uniqueness suffix of a mapped id).
		sent := req.ID
		if !o.cfg.Client.ValidID(sent) {
			sent = mappedIDFor(req) + "-00"
		}
		item := providers.BatchItem{CustomID: sent, Body: req.Body, Endpoint: req.Endpoint}
		n, u := o.cfg.Client.ItemSize(item), providers.BatchUnits(item)
		if code, msg := o.unbatchable(req, n, u); code != "" {
			return o.failOne(req, code, msg)
		}
		return b.add(ctx, req, n, u)
	})
	if err != nil {
		return err
	}
	return b.flushAll(ctx)
}

// pending says whether req still needs a batch, and counts, on the first
// read of the source only, those answered or kept failed by an earlier run.
func (o *offline) pending(req *providers.Request, first bool) bool {
	switch {
	case o.wrote[req.ID]:
		return false // collected from a batch earlier in this run
	case o.cfg.Store.Done(req.ID):
		if first {
			o.c.Skipped.Add(1)
		}
		return false
	case o.cfg.Store.Failed(req.ID):
		if first {
			o.c.Failed.Add(1) // failed before, and kept failed (--no-retry-failed)
		}
		return false
	case o.inBat[req.ID] > 0:
		return false
	}
	return true
}

// unbatchable gives the errors-file code and message of a request no batch
// can take (n bytes and u units as sent), or "" when one can.
func (o *offline) unbatchable(req *providers.Request, n int64, u int) (code, msg string) {
	switch {
	case int(req.Endpoint) >= numBatchEndpoints:
		return "unsupported_endpoint", "the " + req.Endpoint.String() + " endpoint has no batch API"
	case n > o.maxBytes:
		return "too_large_for_batch", fmt.Sprintf("the request takes %d bytes in a batch, more than the batch limit of %d; run it with --mode sync", n, o.maxBytes)
	case u > o.maxItems:
		return "too_large_for_batch", fmt.Sprintf("the request holds %d inputs, more than a batch takes (%d); run it with --mode sync", u, o.maxItems)
	}
	return "", ""
}

// batcher fills batches for submitPending. One batch holds one endpoint and
// one model (OpenAI's endpoint is per batch, Gemini's model): requests fill
// a batch per endpoint and model, each up to the limits in units (an
// embeddings request counts its inputs) and bytes.
type batcher struct {
	o      *offline
	groups map[batchKey]*batchGroup
	order  []batchKey // first seen first, for a deterministic flush
}

type batchKey struct {
	ep    providers.Endpoint
	model string
}

// batchGroup is the batch being filled for one key.
type batchGroup struct {
	items []*providers.Request
	size  int64
	units int
}

// add puts req (n bytes, u units) in its key's batch, submitting that batch
// first when req would take it past a limit.
func (b *batcher) add(ctx context.Context, req *providers.Request, n int64, u int) error {
	k := batchKey{req.Endpoint, req.Model}
	g := b.groups[k]
	if g == nil {
		g = &batchGroup{}
		b.groups[k] = g
		b.order = append(b.order, k)
	}
	if g.units+u > b.o.maxItems || g.size+n > b.o.maxBytes {
		if err := b.flush(ctx, g); err != nil {
			return err
		}
	}
	g.items = append(g.items, req)
	g.size += n
	g.units += u
	return nil
}

// flush submits g's requests, if any, and empties it.
func (b *batcher) flush(ctx context.Context, g *batchGroup) error {
	if len(g.items) == 0 {
		return nil
	}
	err := b.o.submit(ctx, g.items)
	g.items, g.size, g.units = g.items[:0], 0, 0
	return err
}

// flushAll submits every partly filled batch, in the order their keys were
// first seen.
func (b *batcher) flushAll(ctx context.Context) error {
	for _, k := range b.order {
		if err := b.flush(ctx, b.groups[k]); err != nil {
			return err
		}
	}
	return nil
}

// numBatchEndpoints is how many endpoints have batch APIs: chat,
// responses and embeddings.
const numBatchEndpoints = 3

// mappedIDFor is the id a request is sent under when its own is rejected:
// "llmrun-<line>" (made unique within its batch by submit).
func mappedIDFor(req *providers.Request) string { return "llmrun-" + strconv.Itoa(req.Line) }

// failOne writes an errors-file line for a request that never reached a batch.
func (o *offline) failOne(req *providers.Request, code, msg string) error {
	l := output.Line{CustomID: req.ID, Error: &output.LineError{Code: code, Message: msg},
		Llmrun: output.LineDetails{Provider: o.cfg.Client.Name(), Model: req.Model, Mode: "batch"}}
	return o.write(req.ID, &l, false)
}

// pollRound polls every open batch once and collects those that ended.
func (o *offline) pollRound(ctx context.Context) error {
	keep := o.open[:0]
	var ferr error
	for i, rec := range o.open {
		if ferr != nil {
			keep = append(keep, o.open[i:]...)
			break
		}
		if rec.dropped {
			ferr = o.forget(rec)
			continue
		}
		closed, err := o.pollOne(ctx, rec)
		if err != nil {
			ferr = err
		}
		if !closed {
			keep = append(keep, rec)
		}
	}
	clear(o.open[len(keep):])
	o.open = keep
	return ferr
}

// pollOne polls rec and, if its batch ended, collects it; closed reports
// that its record is gone. Transient failures are logged and left for the
// next round.
func (o *offline) pollOne(ctx context.Context, rec *BatchRecord) (closed bool, err error) {
	cl := o.cfg.Client
	job, err := cl.Poll(ctx, rec.ID)
	if err != nil {
		return o.pollFailed(ctx, rec, err)
	}
	o.report(rec, job)
	if !job.Ended {
		return false, nil
	}
	if err := o.collect(ctx, rec, job); err != nil {
		return o.pollFailed(ctx, rec, err)
	}
	return true, nil
}

func (o *offline) pollFailed(ctx context.Context, rec *BatchRecord, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, context.Cause(ctx)
	}
	var pe *providers.Error
	switch {
	case !errors.As(err, &pe):
		return false, err // the checkpoint failed
	case pe.Class.AbortsRun():
		return false, &ending.AbortError{Cause: err}
	case pe.Status == 404:
		// The provider does not know the batch (expired long ago, another
		// account, a restarted mock): nothing runs there, so its requests
		// are pending again.
		o.logf("batch %s is unknown to %s (%v); its %d requests are pending again", rec.ID, o.cfg.Client.Name(), err, len(rec.IDs))
		o.released = true
		return true, o.forget(rec)
	case pe.Class == providers.ClassTooLarge || pe.Class == providers.ClassInvalid:
		// A result line past its bound, a results URL refused as off-host:
		// the next poll would download (or be refused) the same way.
		return false, &ending.AbortError{Cause: fmt.Errorf("batch %s: its results cannot be collected: %w; it stays open at the provider and its requests pending", rec.ID, err)}
	}
	o.logf("batch %s: %v; trying again at the next poll", rec.ID, err)
	return false, nil
}

// forget drops rec from the sidecar state.
func (o *offline) forget(rec *BatchRecord) error {
	o.release(rec)
	if err := o.cfg.Store.SetState(rec.key(), nil); err != nil {
		return err
	}
	return o.markCollected(rec.ID)
}

// report logs a batch's progress when it changed.
func (o *offline) report(rec *BatchRecord, job providers.BatchJob) {
	total := max(job.Total, len(rec.IDs))
	var line string
	if done := job.Succeeded + job.Failed + job.Expired + job.Canceled; done > 0 || job.Ended {
		line = fmt.Sprintf("batch %s: %s, %d/%d done (%d succeeded, %d failed", rec.ID, job.Status, done, total, job.Succeeded, job.Failed)
		if job.Expired > 0 {
			line += fmt.Sprintf(", %d expired", job.Expired)
		}
		if job.Canceled > 0 {
			line += fmt.Sprintf(", %d cancelled", job.Canceled)
		}
		line += ")"
	} else {
		line = fmt.Sprintf("batch %s: %s, %d requests processing", rec.ID, job.Status, total)
	}
	if job.Error != "" {
		line += ": " + job.Error
	}
	if o.last[rec.ID] != line {
		o.last[rec.ID] = line
		o.logf("%s", line)
	}
}

// collect reads an ended batch's results into the checkpoint and drops its
// record. Results already in the checkpoint (a collection cut short) are
// skipped; requests the provider returned no result for are failed.
func (o *offline) collect(ctx context.Context, rec *BatchRecord, job providers.BatchJob) error {
	if rec.Unverified {
		if ours, err := o.verify(ctx, rec, job); !ours {
			return err
		}
	}
	st := o.cfg.Store
	inRec := make(map[string]bool, len(rec.IDs))
	for _, id := range rec.IDs {
		inRec[id] = true
	}
	latency := max(o.cfg.Now().Sub(rec.Created), 0)
	if job.Error == "" {
		err := o.cfg.Client.Results(ctx, job, func(r providers.BatchResult) error {
			id := r.CustomID
			if orig, ok := rec.Mapped[id]; ok {
				id = orig
			}
			if !inRec[id] || st.Done(id) || (!r.OK() && st.Failed(id)) {
				return nil
			}
			l := o.resultLine(id, &r, latency)
			if r.OK() {
				o.c.InputTokens.Add(r.Usage.InputTokens)
				o.c.OutputTokens.Add(r.Usage.OutputTokens)
			}
			return o.write(id, l, r.OK())
		})
		if err != nil {
			return err
		}
	}
	code, msg := "missing_result", "the provider returned no result for this request; rerun to retry it"
	switch {
	case job.Error != "":
		code, msg = "batch_failed", "the batch failed as a whole: "+job.Error
	case job.Status == "expired":
		code, msg = "batch_expired", "the request was not processed before the batch expired"
	case job.Status == "cancelled":
		code, msg = "batch_cancelled", "the request was not processed: the batch was cancelled"
	}
	for _, id := range rec.IDs {
		if st.Done(id) || st.Failed(id) {
			continue
		}
		l := output.Line{CustomID: id, Error: &output.LineError{Code: code, Message: msg},
			Llmrun: output.LineDetails{Provider: o.cfg.Client.Name(), Mode: "batch", LatencyMS: latency.Milliseconds()}}
		if err := o.write(id, &l, false); err != nil {
			return err
		}
	}
	if err := o.forget(rec); err != nil {
		return err
	}
	o.logf("collected batch %s (%s)", rec.ID, job.Status)
	return nil
}

// resultLine converts a batch result into the common output line.
func (o *offline) resultLine(id string, r *providers.BatchResult, latency time.Duration) *output.Line {
	model := r.Model
	if model == "" && len(r.Body) > 0 {
		model = gjson.GetBytes(r.Body, "model").String()
	}
	l := &output.Line{
		CustomID: id,
		Llmrun: output.LineDetails{
			Provider:     o.cfg.Client.Name(),
			Model:        model,
			Mode:         "batch",
			LatencyMS:    latency.Milliseconds(),
			InputTokens:  r.Usage.InputTokens,
			OutputTokens: r.Usage.OutputTokens,
			CacheRead:    r.Usage.CacheReadTokens,
			CacheWrite:   r.Usage.CacheWriteTokens,
		},
	}
	if r.OK() && o.cfg.Prices != nil {
		l.Llmrun.CostUSD = o.c.ChargeBatch(o.cfg.Prices, o.cfg.Client.Name(), model, r.Usage)
	}
	if r.Outcome == providers.OutcomeSucceeded || r.Outcome == providers.OutcomeErrored {
		l.Llmrun.Attempts = 1
	}
	if r.Status != 0 || r.Body != nil {
		l.Response = &output.LineResp{StatusCode: r.Status, RequestID: r.RequestID, Body: r.Body}
	}
	if !r.OK() {
		l.Error = &output.LineError{Code: r.Outcome, Message: r.Outcome}
		if r.Err != nil {
			l.Error.Message = r.Err.Error()
			switch {
			case r.Err.Code != "":
				l.Error.Code = r.Err.Code
			case r.Err.Type != "":
				l.Error.Code = r.Err.Type
			}
		}
	}
	return l
}

// write appends a line to the output (ok) or the errors file and counts it.
func (o *offline) write(id string, l *output.Line, ok bool) error {
	b, err := l.Marshal()
	if err != nil {
		return fmt.Errorf("encoding result for %s: %w", id, err)
	}
	if ok {
		err = o.cfg.Store.AppendResult(id, b)
	} else {
		err = o.cfg.Store.AppendError(id, b)
	}
	if errors.Is(err, checkpoint.ErrAlreadyDone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	o.wrote[id] = true
	if ok {
		o.c.Succeeded.Add(1)
	} else {
		o.c.Failed.Add(1)
	}
	o.c.Attempts.Add(int64(l.Llmrun.Attempts))
	return nil
}
