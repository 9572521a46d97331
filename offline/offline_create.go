package offline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner/retry"
)

// Creating a batch without ever paying twice.
//
// A create call the process does not live to see answered may still have
// created the batch. So before the call an intent is recorded: a
// BatchRecord without an ID, keyed by a tag unique to this intent, holding
// the request ids. The provider gets the tag with the batch: OpenAI keeps
// it in the batch's metadata (llmrun_tag, beside llmrun_job, a hash of the
// output path, and llmrun_input, the input file's name); Anthropic keeps
// nothing of the kind, so there the batch's first request is sent under
// the custom_id "llmrun-<tag>". Once created, the batch's record replaces
// the intent.
//
// A rerun that finds an intent lists the provider's recent batches. OpenAI:
// the batch with the intent's tag is the intent's, without doubt (more than
// one: the oldest is kept, the others cancelled). Anthropic: any batch of
// the intent's size created around the intent's time may be it; each is
// adopted as unverified, and its results are read only once they prove it
// ours by holding the tagged custom_id (the others are left alone, and
// their requests submitted again). No batch found: the call never took
// effect, the intent is dropped and its requests are submitted again
// (OpenAI: reusing the input file the interrupted attempt uploaded). A
// create may still be in flight at the provider right after the crash, so
// an intent younger than CreateGrace is looked for again once it is older.
//
// The state file itself may be lost while batches are open. With OpenAI a
// batch run lists the batches labelled with its output's job and adopts
// those it does not hold, learning their requests from their input files.
// Anthropic offers no way to tell one's batches from others' while they
// run, so this case cannot be covered there.

// State keys beside the batch records ("batch:<id>").
const (
	// intentStatePrefix + tag keys an intent.
	intentStatePrefix = batchStatePrefix + "intent-"
	// collectedStatePrefix + id marks a batch collected (or left alone)
	// within orphanWindow, so that the orphan scan does not read its
	// input file again.
	collectedStatePrefix = "batch-done:"
)

const (
	// DefaultCreateGrace is how long after an interrupted create a rerun
	// waits before concluding that the provider never created the batch.
	DefaultCreateGrace = time.Minute
	// createSkew bounds the disagreement of the provider's clock and
	// ours, when a batch is told by its creation time.
	createSkew = 5 * time.Minute
	// orphanWindow is how far back the orphan scan looks: every open batch
	// is younger (24 h window), and a batch that ended within it may still
	// hold uncollected answers.
	orphanWindow = 25 * time.Hour
)

// key is the record's sidecar state key.
func (r *BatchRecord) key() string {
	if r.ID == "" {
		return intentStatePrefix + r.Tag
	}
	return batchStatePrefix + r.ID
}

// tagItemID is the custom_id that proves a batch ours at a provider
// without labels.
func tagItemID(tag string) string { return "llmrun-" + tag }

// jobOf names the checkpoint at the provider: a hash of the output path,
// the same on every rerun of the same command.
func jobOf(output string) string {
	if abs, err := filepath.Abs(output); err == nil {
		output = abs
	}
	sum := sha256.Sum256([]byte("llmrun job\x00" + output))
	return hex.EncodeToString(sum[:8])
}

// newTag returns a tag unique to one intent: a hash of the job, the time
// and the requests, salted.
func (o *offline) newTag(reqs []*providers.Request, salt int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s\x00%s\x00%d", o.job, o.cfg.Now().UnixNano(), len(reqs), reqs[0].ID, reqs[len(reqs)-1].ID, salt)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// putState records rec under its key, durably.
func (o *offline) putState(rec *BatchRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return o.cfg.Store.SetState(rec.key(), b)
}

// hold and release count the records holding each input id.
func (o *offline) hold(rec *BatchRecord) {
	for _, id := range rec.IDs {
		o.inBat[id]++
	}
}

func (o *offline) release(rec *BatchRecord) {
	for _, id := range rec.IDs {
		if o.inBat[id]--; o.inBat[id] <= 0 {
			delete(o.inBat, id)
		}
	}
}

// label is what the provider is asked to keep with a batch.
func (o *offline) label(tag string) providers.BatchLabel {
	return providers.BatchLabel{Job: o.job, Tag: tag, Input: o.input, Resume: o.resume}
}

// submit creates one batch: the intent first, then the call, then the
// record in the intent's place.
func (o *offline) submit(ctx context.Context, reqs []*providers.Request) error {
	in, items := o.intent(reqs)
	if err := o.putState(in); err != nil {
		return err
	}
	o.hold(in)
	job, err := o.create(ctx, in, items)
	if err != nil {
		return o.createFailed(in, reqs, err)
	}
	rec := *in
	rec.ID = job.ID
	if err := o.putState(&rec); err != nil {
		// Unrecorded, a rerun would adopt it by its tag, but stop it
		// anyway: the state file cannot be written.
		if _, cerr := o.cfg.Client.Cancel(context.WithoutCancel(ctx), job.ID); cerr != nil {
			return fmt.Errorf("recording batch %s: %w; cancelling it failed too (%v): cancel it by hand", job.ID, err, cerr)
		}
		return fmt.Errorf("recording batch %s: %w (the batch was cancelled)", job.ID, err)
	}
	if err := o.cfg.Store.SetState(in.key(), nil); err != nil {
		o.logf("note: removing the intent of batch %s: %v (the next run drops it)", job.ID, err)
	}
	o.open = append(o.open, &rec)
	o.hold(&rec)
	o.release(in)
	o.logf("submitted batch %s to %s: %d requests", job.ID, o.cfg.Client.Name(), len(reqs))
	o.report(&rec, job)
	return nil
}

// intent builds the record of a batch about to be created and its items:
// custom_ids the provider would reject are mapped to "llmrun-<line>" (made
// unique within the batch), and without labels the first item goes under
// the tag's custom_id.
func (o *offline) intent(reqs []*providers.Request) (*BatchRecord, []providers.BatchItem) {
	cl := o.cfg.Client
	taken := make(map[string]bool, len(reqs))
	for _, r := range reqs {
		if cl.ValidID(r.ID) {
			taken[r.ID] = true
		}
	}
	rec := &BatchRecord{Provider: cl.Name(), BaseURL: providers.StripUserinfo(cl.BaseURL()), Created: o.cfg.Now().UTC(),
		IDs: make([]string, len(reqs)), Input: o.input}
	rec.Tag = o.newTag(reqs, 0)
	for salt := 1; !cl.Labels() && taken[tagItemID(rec.Tag)]; salt++ {
		rec.Tag = o.newTag(reqs, salt)
	}
	items := make([]providers.BatchItem, len(reqs))
	mapTo := func(sent, id string) {
		if rec.Mapped == nil {
			rec.Mapped = make(map[string]string)
		}
		rec.Mapped[sent] = id
	}
	for i, r := range reqs {
		sent := r.ID
		switch {
		case i == 0 && !cl.Labels():
			sent = tagItemID(rec.Tag)
			mapTo(sent, r.ID)
		case !cl.ValidID(sent):
			sent = mappedIDFor(r)
			for k := 2; taken[sent]; k++ {
				sent = mappedIDFor(r) + "-" + strconv.Itoa(k)
			}
			taken[sent] = true
			mapTo(sent, r.ID)
		}
		rec.IDs[i] = r.ID
		items[i] = providers.BatchItem{CustomID: sent, Body: r.Body, Endpoint: r.Endpoint}
	}
	return rec, items
}

// submitAttempts bounds the tries of a create call answered with a
// retryable error status. A call that failed without an answer is not
// retried: the provider may have created the batch (the intent stays, and
// the rerun looks for it).
const submitAttempts = 3

// submitPolicy is the retry policy of create calls: submitAttempts tries,
// backing off from the first poll interval, doubling up to the longest,
// all within submitTimeout. Decisions are made without jitter (a nil
// draw): a create call is one call per batch, not a crowd to spread.
func submitPolicy(cfg *OfflineConfig) retry.Policy {
	return retry.Policy{MaxAttempts: submitAttempts, Deadline: submitTimeout, Base: cfg.PollInterval, Max: cfg.PollMax}
}

// create makes the create call, retrying answered failures as submitPolicy
// decides. Once under way it is not cut short by a stop (an interrupt, the
// caller's ctx): the provider may create the batch anyway, and it must
// then be recorded. submitTimeout bounds it instead.
func (o *offline) create(ctx context.Context, in *BatchRecord, items []providers.BatchItem) (providers.BatchJob, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
	defer cancel()
	policy, start := submitPolicy(&o.cfg), o.cfg.Now()
	for attempt := 1; ; attempt++ {
		job, err := o.cfg.Client.Submit(sctx, items, o.label(in.Tag))
		if err == nil || !answered(err) {
			return job, err
		}
		d := policy.Decide(retry.AttemptOf(attempt, err, start), o.cfg.Now(), nil)
		if !d.Retry {
			return job, err
		}
		o.logf("creating a batch failed (%v); retrying in %v", err, d.Delay)
		if !o.cfg.Sleep(ctx, d.Delay) {
			return job, &stoppedError{last: err, cause: context.Cause(ctx)}
		}
	}
}

// stoppedError is a create given up because the run stopped between
// attempts; every attempt was answered, so no batch exists.
type stoppedError struct{ last, cause error }

func (e *stoppedError) Error() string { return e.cause.Error() }
func (e *stoppedError) Unwrap() error { return e.cause }

// answered reports whether err is an answer from the provider (an error
// status): then the call created nothing.
func answered(err error) bool {
	var pe *providers.Error
	return errors.As(err, &pe) && pe.Status != 0
}

// createFailed settles an intent whose create call failed. An answered
// failure created nothing: the intent goes, and the requests fail (a batch
// the provider refuses as it is) or stay pending (the run stops). A
// failure without an answer leaves the intent for the rerun to resolve.
func (o *offline) createFailed(in *BatchRecord, reqs []*providers.Request, err error) error {
	var se *stoppedError
	if !errors.As(err, &se) && !answered(err) {
		return &ending.AbortError{Cause: fmt.Errorf("creating a batch of %d requests: %w (it may exist at %s all the same: rerun to find it by its tag %s before anything else is created)",
			len(reqs), err, o.cfg.Client.Name(), in.Tag)}
	}
	if derr := o.dropIntent(in); derr != nil {
		return derr
	}
	class := providers.ClassOf(err)
	switch {
	case se != nil:
		return se.cause
	case class.AbortsRun():
		return &ending.AbortError{Cause: err}
	case class == providers.ClassInvalid:
		// The provider refuses this batch as it is; its requests can
		// still run live.
		o.logf("the provider refused a batch of %d requests: %v", len(reqs), err)
		for _, r := range reqs {
			if err := o.failOne(r, "batch_rejected", err.Error()); err != nil {
				return err
			}
		}
		return nil
	}
	return &ending.AbortError{Cause: fmt.Errorf("creating a batch of %d requests: %w", len(reqs), err)}
}

// dropIntent forgets an intent whose batch does not exist.
func (o *offline) dropIntent(in *BatchRecord) error {
	o.release(in)
	return o.cfg.Store.SetState(in.key(), nil)
}

// recoverCreates finds the batches a crash may have left unrecorded: those
// of the intents and, where batches carry labels, any batch labelled with
// this checkpoint's job that the state file does not hold.
func (o *offline) recoverCreates(ctx context.Context) error {
	if err := o.dropRecordedIntents(); err != nil {
		return err
	}
	orphans := o.cfg.Client.Labels() && o.cfg.Source != nil
	if len(o.intents) == 0 && !orphans {
		return nil
	}
	jobs, err := o.list(ctx)
	if err != nil {
		return o.listFailed(ctx, err)
	}
	if wait := o.graceLeft(jobs); wait > 0 {
		o.logf("a batch was being created %v ago; waiting %v for %s to show it before concluding it was not", o.cfg.CreateGrace-wait, wait, o.cfg.Client.Name())
		if !o.cfg.Sleep(ctx, wait) {
			return context.Cause(ctx)
		}
		if jobs, err = o.list(ctx); err != nil {
			return o.listFailed(ctx, err)
		}
	}
	for _, in := range o.intents {
		if err := o.resolveIntent(ctx, in, o.matches(in, jobs)); err != nil {
			return err
		}
	}
	o.intents = nil
	if orphans {
		return o.adoptOrphans(ctx, jobs)
	}
	return nil
}

// dropRecordedIntents drops the intents whose batch was recorded (a crash
// between writing the record and removing the intent).
func (o *offline) dropRecordedIntents() error {
	keep := o.intents[:0]
	for _, in := range o.intents {
		recorded := false
		for _, r := range o.open {
			recorded = recorded || r.Tag == in.Tag
		}
		if !recorded {
			keep = append(keep, in)
		} else if err := o.dropIntent(in); err != nil {
			return err
		}
	}
	o.intents = keep
	return nil
}

// list lists the provider's batches as far back as recovery needs.
func (o *offline) list(ctx context.Context) ([]providers.BatchJob, error) {
	since := o.cfg.Now().Add(-orphanWindow)
	for _, in := range o.intents {
		if t := in.Created.Add(-createSkew); t.Before(since) {
			since = t
		}
	}
	return o.cfg.Client.List(ctx, since)
}

// listFailed: without the list the intents stay unresolved (their requests
// are not submitted again) and the orphan scan is skipped; the run goes on
// with the rest, unless the failure stops every call.
func (o *offline) listFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if providers.ClassOf(err).AbortsRun() {
		return &ending.AbortError{Cause: err}
	}
	o.logf("listing the batches at %s failed (%v): %d interrupted batch creation(s) stay unresolved until the next run", o.cfg.Client.Name(), err, len(o.intents))
	o.intents = nil
	return nil
}

// graceLeft is how long to wait before an intent without a match may be
// taken as never created.
func (o *offline) graceLeft(jobs []providers.BatchJob) time.Duration {
	var wait time.Duration
	for _, in := range o.intents {
		if len(o.matches(in, jobs)) == 0 {
			wait = max(wait, in.Created.Add(o.cfg.CreateGrace).Sub(o.cfg.Now()))
		}
	}
	return wait
}

// matches returns the listed batches that may be in's, newest first: the
// one with its tag, or, without labels, every unrecorded batch of its size
// created around its time.
func (o *offline) matches(in *BatchRecord, jobs []providers.BatchJob) []providers.BatchJob {
	recorded := make(map[string]bool, len(o.open))
	for _, r := range o.open {
		recorded[r.ID] = true
	}
	from, to := in.Created.Add(-createSkew), in.Created.Add(submitTimeout+createSkew)
	var ms []providers.BatchJob
	for _, j := range jobs {
		switch {
		case o.cfg.Client.Labels():
			if j.Label.Tag == in.Tag && j.Label.Job == o.job {
				ms = append(ms, j)
			}
		case !recorded[j.ID] && j.Total == len(in.IDs) && !j.Created.Before(from) && !j.Created.After(to):
			ms = append(ms, j)
		}
	}
	return ms
}

// resolveIntent adopts the batch(es) found for an intent, or drops it.
func (o *offline) resolveIntent(ctx context.Context, in *BatchRecord, ms []providers.BatchJob) error {
	cl := o.cfg.Client
	if len(ms) == 0 {
		o.logf("an interrupted batch creation (%d requests, tag %s) never reached %s; its requests are pending again", len(in.IDs), in.Tag, cl.Name())
		o.resume = true
		return o.dropIntent(in)
	}
	if cl.Labels() {
		for _, extra := range ms[:len(ms)-1] {
			o.logf("batch %s repeats batch %s (tag %s): cancelling it", extra.ID, ms[len(ms)-1].ID, in.Tag)
			if _, err := cl.Cancel(ctx, extra.ID); err != nil {
				o.logf("cancelling batch %s failed: %v", extra.ID, err)
			}
		}
		ms = ms[len(ms)-1:]
	}
	for _, j := range ms {
		rec := *in
		rec.ID, rec.Unverified = j.ID, !cl.Labels()
		if err := o.putState(&rec); err != nil {
			return err
		}
		o.open = append(o.open, &rec)
		o.hold(&rec)
		how := "by its tag"
		if rec.Unverified {
			how = "by its size and creation time; its results are read only if they prove it this run's"
		}
		o.logf("found batch %s at %s, created for %d requests when a run stopped (%s): resuming it", j.ID, cl.Name(), len(in.IDs), how)
	}
	return o.dropIntent(in)
}

// adoptOrphans adopts the batches labelled with this checkpoint's job that
// the state file does not hold (it was deleted or lost): an open one if
// any of its requests is pending, an ended one with answers if all are (it
// was never collected). Their requests come from their input files.
func (o *offline) adoptOrphans(ctx context.Context, jobs []providers.BatchJob) error {
	recorded := make(map[string]bool, len(o.open))
	for _, r := range o.open {
		recorded[r.ID] = true
	}
	var cands []providers.BatchJob
	var sent [][]string
	for _, j := range jobs {
		if _, seen := o.cfg.Store.State(collectedStatePrefix + j.ID); seen || recorded[j.ID] || j.Label.Job != o.job || (j.Ended && j.Succeeded == 0) {
			continue
		}
		var ids []string
		if err := o.cfg.Client.SentIDs(ctx, j, func(id string) error { ids = append(ids, id); return nil }); err != nil {
			o.logf("batch %s at %s carries this output's label but its requests cannot be read (%v); not adopting it", j.ID, o.cfg.Client.Name(), err)
			continue
		}
		cands, sent = append(cands, j), append(sent, ids)
	}
	if len(cands) == 0 {
		return nil
	}
	toInput, err := o.inputIDs(sent)
	if err != nil {
		return err
	}
	for i, j := range cands {
		if err := o.adoptOrphan(j, sent[i], toInput); err != nil {
			return err
		}
	}
	return nil
}

// inputIDs maps the custom_ids of orphan batches back to input ids, in one
// pass over the source: an id sent as it is, or "llmrun-<line>[-k]" for the
// request on that line.
func (o *offline) inputIDs(sent [][]string) (map[string]string, error) {
	want, lines := make(map[string]bool), make(map[int]bool)
	for _, ids := range sent {
		for _, s := range ids {
			want[s] = true
			if n, ok := mappedLine(s); ok {
				lines[n] = true
			}
		}
	}
	direct, byLine := make(map[string]bool), make(map[int]string)
	err := o.cfg.Source.Each(func(req *providers.Request) error {
		if want[req.ID] && o.cfg.Client.ValidID(req.ID) {
			direct[req.ID] = true
		}
		if lines[req.Line] {
			byLine[req.Line] = req.ID
		}
		return nil
	})
	out := make(map[string]string, len(want))
	for s := range want {
		if direct[s] {
			out[s] = s
		} else if n, ok := mappedLine(s); ok && byLine[n] != "" {
			out[s] = byLine[n]
		}
	}
	return out, err
}

// mappedLine parses the line of a mapped id "llmrun-<line>[-k]".
func mappedLine(sent string) (int, bool) {
	rest, ok := strings.CutPrefix(sent, "llmrun-")
	if !ok {
		return 0, false
	}
	rest, _, _ = strings.Cut(rest, "-")
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// adoptOrphan records one orphan batch if it holds answers still wanted;
// otherwise it marks it seen, so that later runs do not read it again.
func (o *offline) adoptOrphan(j providers.BatchJob, sent []string, toInput map[string]string) error {
	rec := &BatchRecord{ID: j.ID, Provider: o.cfg.Client.Name(), BaseURL: providers.StripUserinfo(o.cfg.Client.BaseURL()),
		Created: j.Created, Tag: j.Label.Tag, Input: j.Label.Input}
	pending := 0
	for _, s := range sent {
		id, ok := toInput[s]
		if !ok {
			continue // not a request of this input (changed since)
		}
		if s != id {
			if rec.Mapped == nil {
				rec.Mapped = make(map[string]string)
			}
			rec.Mapped[s] = id
		}
		rec.IDs = append(rec.IDs, id)
		if !o.cfg.Store.Done(id) && !o.cfg.Store.Failed(id) && o.inBat[id] == 0 {
			pending++
		}
	}
	if pending == 0 || (j.Ended && pending < len(rec.IDs)) {
		return o.markCollected(j.ID)
	}
	if err := o.putState(rec); err != nil {
		return err
	}
	o.open = append(o.open, rec)
	o.hold(rec)
	o.logf("batch %s at %s carries this output's label but is not in its state file (was it deleted?): adopting it (%d requests, %d of them pending)",
		j.ID, o.cfg.Client.Name(), len(rec.IDs), pending)
	return nil
}

// markCollected notes that batch id needs no adopting again (labels only:
// the orphan scan is the only reader).
func (o *offline) markCollected(id string) error {
	if !o.cfg.Client.Labels() {
		return nil
	}
	b, _ := json.Marshal(map[string]time.Time{"at": o.cfg.Now().UTC()})
	return o.cfg.Store.SetState(collectedStatePrefix+id, b)
}

// pruneCollected drops the marks older than the orphan scan looks.
func (o *offline) pruneCollected() error {
	for _, k := range o.cfg.Store.StateKeys() {
		if !strings.HasPrefix(k, collectedStatePrefix) {
			continue
		}
		v, _ := o.cfg.Store.State(k)
		var m struct{ At time.Time }
		if json.Unmarshal(v, &m) == nil && o.cfg.Now().Sub(m.At) < orphanWindow {
			continue
		}
		if err := o.cfg.Store.SetState(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// verify reads the results of a batch adopted by its size and time until
// they show the tagged custom_id: then it is ours. Not ours, it is
// forgotten (its requests are pending again); ours, its siblings (the
// other candidates for the same intent) are not.
func (o *offline) verify(ctx context.Context, rec *BatchRecord, job providers.BatchJob) (bool, error) {
	want, found := tagItemID(rec.Tag), errors.New("found")
	err := o.cfg.Client.Results(ctx, job, func(r providers.BatchResult) error {
		if r.CustomID == want {
			return found
		}
		return nil
	})
	switch {
	case errors.Is(err, found):
	case err != nil:
		return false, err
	default:
		o.logf("batch %s is not this run's (its results lack %s): leaving it alone; its %d requests are pending again", rec.ID, want, len(rec.IDs))
		o.released = true
		return false, o.forget(rec)
	}
	rec.Unverified = false
	if err := o.putState(rec); err != nil {
		return false, err
	}
	for _, r := range o.open {
		if r != rec && r.Unverified && r.Tag == rec.Tag {
			r.dropped = true
		}
	}
	o.logf("batch %s proved this run's by its results", rec.ID)
	return true, nil
}
