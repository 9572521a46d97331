package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
)

// OfflineOptions are the batch command's flags for the offline route (the
// providers' batch APIs).
type OfflineOptions struct {
	Mode      modeValue
	Threshold int
	Deadline  deadlineValue
	// PollInterval and PollMax bound the waits between polls.
	PollInterval, PollMax time.Duration
	// MaxItems and MaxBytes cap a batch below the provider's limits
	// (hidden; tests).
	MaxItems int
	MaxBytes int64
}

// batchWindow is the providers' completion window.
const batchWindow = 24 * time.Hour

func addOfflineFlags(f *pflag.FlagSet, o *OfflineOptions) {
	o.Mode = "sync"
	f.Var(&o.Mode, "mode", "sync (live API), batch (the provider's batch API: half price, results within 24h) or auto (batch when --batch-threshold requests are pending and the --deadline allows 24h)")
	f.IntVar(&o.Threshold, "batch-threshold", 1000, "with --mode auto, the fewest pending requests worth a provider batch")
	f.Var(&o.Deadline, "deadline", "when results are needed: a duration from now (36h) or an RFC 3339 time; --mode auto uses the batch API only if it is at least 24h away")
	f.DurationVar(&o.PollInterval, "poll-interval", runner.DefaultPollInterval, "with --mode batch, the first wait between polls of a batch (it grows by half up to --poll-max)")
	f.DurationVar(&o.PollMax, "poll-max", runner.DefaultPollMax, "with --mode batch, the longest wait between polls")
	f.IntVar(&o.MaxItems, "batch-max-items", 0, "cap on requests per provider batch (0: the provider's limit)")
	f.Int64Var(&o.MaxBytes, "batch-max-bytes", 0, "cap on bytes per provider batch (0: the provider's limit)")
	f.MarkHidden("batch-max-items")
	f.MarkHidden("batch-max-bytes")
}

// modeValue is --mode: sync, batch or auto.
type modeValue string

func (m *modeValue) String() string { return string(*m) }
func (m *modeValue) Type() string   { return "mode" }
func (m *modeValue) Set(s string) error {
	switch s {
	case "sync", "batch", "auto":
		*m = modeValue(s)
		return nil
	}
	return fmt.Errorf("want sync, batch or auto, not %q", s)
}

// deadlineValue is --deadline: a duration from now or an RFC 3339 time.
type deadlineValue struct {
	raw string
	d   time.Duration // from the start of the run, if set as a duration
	at  time.Time     // if set as a time
}

func (d *deadlineValue) String() string { return d.raw }
func (d *deadlineValue) Type() string   { return "deadline" }
func (d *deadlineValue) Set(s string) error {
	if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
		*d = deadlineValue{raw: s, d: dur}
		return nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		*d = deadlineValue{raw: s, at: t}
		return nil
	}
	return fmt.Errorf("want a positive duration (36h) or an RFC 3339 time, not %q", s)
}

// left is the time until the deadline; ok is false when none was given.
func (d *deadlineValue) left(now time.Time) (time.Duration, bool) {
	switch {
	case d.d > 0:
		return d.d, true
	case !d.at.IsZero():
		return d.at.Sub(now), true
	}
	return 0, false
}

// chooseMode applies --mode: "batch" or "sync", and why (for auto).
func chooseMode(o *OfflineOptions, pending, openBatches int, now time.Time) (string, string) {
	switch o.Mode {
	case "batch", "sync":
		return string(o.Mode), ""
	}
	if openBatches > 0 {
		return "batch", fmt.Sprintf("%d batch(es) from an earlier run are still open; collecting them (running their requests live too would pay twice)", openBatches)
	}
	left, has := o.Deadline.left(now)
	switch {
	case pending < o.Threshold:
		return "sync", fmt.Sprintf("%d pending requests < --batch-threshold %d: the live API", pending, o.Threshold)
	case has && left < batchWindow:
		return "sync", fmt.Sprintf("the deadline is %s away, sooner than the batch API's 24h window: the live API", left.Round(time.Minute))
	case has:
		return "batch", fmt.Sprintf("%d pending requests >= --batch-threshold %d and the deadline is %s away: the provider's batch API (half price, results within 24h)", pending, o.Threshold, left.Round(time.Minute))
	}
	return "batch", fmt.Sprintf("%d pending requests >= --batch-threshold %d and no --deadline: the provider's batch API (half price, results within 24h)", pending, o.Threshold)
}

// runOffline runs the batch through the provider's batch API when the mode
// says so, and reports handled=false when the live run should go ahead.
// Before a live run it collects batches left open by an earlier batch-mode
// run, and refuses to run live requests that still sit in open batches.
func runOffline(ctx context.Context, io *IO, o *BatchOptions, env *environment, primary runner.Route, src *runner.Source, total int, store *checkpoint.Store, interrupts <-chan os.Signal) (sum *runner.Summary, err error, handled bool) {
	open, err := runner.OpenBatches(runner.StoreState(store))
	if err != nil {
		return nil, err, true
	}
	done, failed := store.Counts()
	mode, why := chooseMode(&o.Offline, max(total-done-failed, 0), len(open), time.Now())
	if why != "" {
		fmt.Fprintf(io.Err, "llmrun: --mode auto: %s\n", why)
	}
	if mode == "sync" && len(open) == 0 {
		return nil, nil, false
	}
	client, err := env.set.Batch(env.primary, primary.Provider.BaseURL())
	if err != nil {
		return nil, err, true
	}
	cfg := runner.OfflineConfig{
		Source: src, Total: total, Client: client, Store: store,
		MaxItems: o.Offline.MaxItems, MaxBytes: o.Offline.MaxBytes,
		PollInterval: o.Offline.PollInterval, PollMax: o.Offline.PollMax,
		Interrupts: interrupts,
	}
	if !o.Quiet {
		cfg.Log = io.Err
	}
	if mode == "batch" {
		if len(o.Fallback) > 0 {
			fmt.Fprintln(io.Err, "llmrun: note: --fallback applies to live runs only; failed batch requests go to the errors file")
		}
		sum, err := runner.RunOffline(ctx, cfg)
		return sum, err, true
	}
	// Live run, but batches are open: collect what has ended, once.
	cfg.CollectOnly, cfg.NoWait, cfg.Log = true, true, io.Err
	sum, err = runner.RunOffline(ctx, cfg)
	if err != nil && !errors.Is(err, runner.ErrFailures) {
		return sum, err, true
	}
	if open, err = runner.OpenBatches(runner.StoreState(store)); err != nil {
		return nil, err, true
	}
	if len(open) > 0 {
		n := 0
		for _, r := range open {
			n += len(r.IDs)
		}
		return sum, usagef("%d requests sit in %d open provider batch(es) (%s): running them live would pay twice; rerun with --mode batch to wait for them, or `llmrun cancel %s` first", n, len(open), open[0].ID, o.Output), true
	}
	return nil, nil, false
}

// batchClientFor builds the client of a recorded batch (llmrun cancel). The
// record's base URL holds no credentials: when the environment's base URL
// names the same endpoint, it is used instead, with its userinfo.
func batchClientFor(io *IO, rec runner.BatchRecord, baseURL string) (providers.BatchClient, error) {
	entry, err := registry.Lookup(rec.Provider)
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", rec.ID, err)
	}
	if env := entry.BaseURL("", io.Getenv); baseURL == "" && providers.StripUserinfo(env) == rec.BaseURL {
		baseURL = env
	}
	if baseURL == "" {
		baseURL = rec.BaseURL
	}
	set := registry.NewSet(io.Getenv, providers.Config{HTTPClient: providers.NewHTTPClient(1), FirstByteTimeout: 2 * time.Minute})
	return set.Batch(entry, baseURL)
}
