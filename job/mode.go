package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/offline"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
)

// Modes of the batch command (--mode).
const (
	ModeSync  = "sync"  // the live API
	ModeBatch = "batch" // the provider's batch API
	ModeAuto  = "auto"  // batch when enough requests are pending and the deadline allows
)

// ParseMode checks a --mode value.
func ParseMode(s string) (string, error) {
	switch s {
	case ModeSync, ModeBatch, ModeAuto:
		return s, nil
	}
	return "", fmt.Errorf("want sync, batch or auto, not %q", s)
}

// Deadline is when results are needed (--deadline): a duration from the
// start of the run, or a time. The zero Deadline is none.
type Deadline struct {
	After time.Duration
	At    time.Time
}

// ParseDeadline parses a positive duration (36h) or an RFC 3339 time.
func ParseDeadline(s string) (Deadline, error) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return Deadline{After: d}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return Deadline{At: t}, nil
	}
	return Deadline{}, fmt.Errorf("want a positive duration (36h) or an RFC 3339 time, not %q", s)
}

// left is the time from now until the deadline; ok is false when none
// was given.
func (d Deadline) left(now time.Time) (time.Duration, bool) {
	switch {
	case d.After > 0:
		return d.After, true
	case !d.At.IsZero():
		return d.At.Sub(now), true
	}
	return 0, false
}

// OfflineOptions choose between the live API and the providers' batch
// APIs, and shape the batches.
type OfflineOptions struct {
	// Mode is ModeSync, ModeBatch or ModeAuto ("" is sync).
	Mode string
	// Threshold is the fewest pending requests worth a batch (auto).
	Threshold int
	Deadline  Deadline
	// PollInterval and PollMax bound the waits between polls.
	PollInterval, PollMax time.Duration
	// MaxItems and MaxBytes cap a batch below the provider's limits.
	MaxItems int
	MaxBytes int64
	// CreateGrace is how long a rerun looks for the batch of an
	// interrupted create (0: offline.DefaultCreateGrace).
	CreateGrace time.Duration
}

// batchWindow is the providers' completion window.
const batchWindow = 24 * time.Hour

// chooseMode applies --mode at now: ModeBatch or ModeSync, and why (for
// auto).
func chooseMode(o *OfflineOptions, pending, openBatches int, now time.Time) (string, string) {
	switch o.Mode {
	case ModeBatch:
		return ModeBatch, ""
	case ModeSync, "":
		return ModeSync, ""
	}
	if openBatches > 0 {
		return ModeBatch, fmt.Sprintf("%d batch(es) from an earlier run are still open; collecting them (running their requests live too would pay twice)", openBatches)
	}
	left, has := o.Deadline.left(now)
	switch {
	case pending < o.Threshold:
		return ModeSync, fmt.Sprintf("%d pending requests < --batch-threshold %d: the live API", pending, o.Threshold)
	case has && left < batchWindow:
		return ModeSync, fmt.Sprintf("the deadline is %s away, sooner than the batch API's 24h window: the live API", left.Round(time.Minute))
	case has:
		return ModeBatch, fmt.Sprintf("%d pending requests >= --batch-threshold %d and the deadline is %s away: the provider's batch API (half price, results within 24h)", pending, o.Threshold, left.Round(time.Minute))
	}
	return ModeBatch, fmt.Sprintf("%d pending requests >= --batch-threshold %d and no --deadline: the provider's batch API (half price, results within 24h)", pending, o.Threshold)
}

// runOffline runs the batch through the provider's batch API when the mode
// says so, and reports handled=false when the live run should go ahead.
// Before a live run it collects batches left open by an earlier batch-mode
// run, and refuses to run live requests that still sit in open batches.
func (b *batch) runOffline(ctx context.Context) (sum *report.Summary, handled bool, err error) {
	o, store := b.o, b.store
	open, err := offline.OpenBatches(offline.StoreState(store))
	if err != nil {
		return nil, true, err
	}
	done, failed := store.Counts()
	mode, why := chooseMode(&o.Offline, max(b.total-done-failed, 0), len(open), time.Now())
	if mode == ModeBatch && len(open) == 0 && o.Cost.MaxCost > 0 {
		// A provider batch is submitted whole: no per-request cap.
		if o.Offline.Mode == ModeBatch {
			return nil, true, usagef("--max-cost caps live runs only (a provider batch is submitted whole); use --mode sync, or see the batch's cost with llmrun estimate")
		}
		why += "; but --max-cost caps live runs only: the live API"
		mode = ModeSync
	}
	if why != "" {
		b.io.infof("--mode auto: %s%s", why, b.batchSaving())
	}
	if mode == ModeSync && len(open) == 0 {
		return nil, false, nil
	}
	at := b.primaryAt
	at.BaseURL = b.routes[0].Provider.BaseURL()
	client, err := b.set.BatchAt(b.primary, at)
	if err != nil {
		return nil, true, err
	}
	if mode == ModeBatch && len(open) == 0 {
		if ep, line, why := b.unbatched(client); why != "" {
			if o.Offline.Mode == ModeBatch {
				return nil, true, usagef("%s:%d: a %s request, and %s has no batch API for it: %s; run with --mode sync", b.src.Path, line, ep, client.Name(), why)
			}
			b.io.infof("--mode auto: the live API after all: %s has no batch API for %s requests (line %d)", client.Name(), ep, line)
			return nil, false, nil
		}
	}
	cfg := offline.OfflineConfig{
		Source: b.src, Total: b.total, Client: client, Store: store,
		MaxItems: o.Offline.MaxItems, MaxBytes: o.Offline.MaxBytes,
		PollInterval: o.Offline.PollInterval, PollMax: o.Offline.PollMax,
		Interrupts: b.interrupts, CreateGrace: o.Offline.CreateGrace,
		Prices: b.prices, Now: b.io.Now,
	}
	if !o.Quiet {
		cfg.Log = b.io.logLines()
	}
	if mode == ModeBatch {
		if len(o.Fallback) > 0 {
			b.io.infof("note: --fallback applies to live runs only; failed batch requests go to the errors file")
		}
		sum, err := offline.RunOffline(ctx, cfg)
		return sum, true, err
	}
	// Live run, but batches are open: collect what has ended, once.
	cfg.CollectOnly, cfg.NoWait, cfg.Log = true, true, b.io.logLines()
	sum, err = offline.RunOffline(ctx, cfg)
	if err != nil && !errors.Is(err, ending.ErrFailures) {
		return sum, true, err
	}
	if err := b.refuseOpen(); err != nil {
		return sum, true, err
	}
	return nil, false, nil
}

// refuseOpen refuses a live run while requests sit in open provider
// batches: running them live would pay twice.
func (b *batch) refuseOpen() error {
	open, err := offline.OpenBatches(offline.StoreState(b.store))
	if err != nil || len(open) == 0 {
		return err
	}
	n := 0
	for _, r := range open {
		n += len(r.IDs)
	}
	return usagef("%d requests sit in %d open provider batch(es) (%s): running them live would pay twice; rerun with --mode batch to wait for them, or `llmrun cancel %s` first", n, len(open), open[0].ID, b.o.Output)
}

// unbatched is an endpoint the input asks for that client's batch API does
// not take, with its first line and why; why is "" when it takes them all.
func (b *batch) unbatched(client providers.BatchClient) (providers.Endpoint, int, string) {
	eb, ok := client.(providers.EndpointBatcher)
	if !ok {
		return 0, 0, ""
	}
	var (
		bad  providers.Endpoint
		at   int
		what string
	)
	for ep, line := range b.firstLine {
		if ok, why := eb.Batches(ep); !ok && (what == "" || line < at) {
			bad, at, what = ep, line, why
		}
	}
	return bad, at, what
}
