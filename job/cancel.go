package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/offline"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
)

// CancelOptions are the cancel command's options.
type CancelOptions struct {
	// Output is the run's output file, or its input file (its default
	// output is used).
	Output string
	// BaseURL replaces the endpoint recorded with each batch.
	BaseURL string
	// NoWait only asks the provider to cancel; a later run collects.
	NoWait bool
	// PollInterval is the first wait between polls while waiting for
	// the batches to stop.
	PollInterval time.Duration
}

// Cancel cancels the open provider batches recorded in o.Output's state.
// Unless a run holds the output (it collects them itself) or o.NoWait,
// it then waits for them to stop and collects them: answers into the
// output, the cancelled requests into the errors file.
func Cancel(ctx context.Context, io *IO, o CancelOptions) error {
	out := o.Output
	if _, err := os.Stat(out + ".state.json"); err != nil {
		out = DerivePath(out, ".out.jsonl")
	}
	st, err := checkpoint.Status(out)
	if err != nil {
		return usage(fmt.Errorf("no checkpoint at %s: %w", o.Output, err))
	}
	recs, err := offline.OpenBatches(st.State)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		io.infof("%s has no open batches", out)
		return nil
	}
	client, err := cancelAll(ctx, io, recs, o.BaseURL)
	if err != nil {
		return err
	}
	switch {
	case o.NoWait:
		io.infof("the next run on %s collects the results", out)
		return nil
	case st.Running:
		io.infof("the run holding %s (pid %d) collects the results", out, st.PID)
		return nil
	}
	errs := st.Errors
	if errs == "" {
		errs = DerivePath(out, ".errors.jsonl")
	}
	return collectCancelled(ctx, io, client, out, errs, o.PollInterval)
}

// cancelAll asks the provider to cancel each batch and returns a client
// of theirs, for collecting.
func cancelAll(ctx context.Context, io *IO, recs []offline.BatchRecord, baseURL string) (providers.BatchClient, error) {
	var failed []error
	var client providers.BatchClient
	for _, rec := range recs {
		cl, err := batchClientFor(io, rec, baseURL)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		client = cl
		switch {
		case rec.ID == "":
			io.infof("a batch of %d requests was being created when a run stopped; a batch run finds out whether it exists (cancel it then)", len(rec.IDs))
			continue
		case rec.Unverified:
			io.infof("batch %s (%d requests) is not yet proven this output's (it was adopted by its size and creation time): not cancelling what may be another job's batch", rec.ID, len(rec.IDs))
			continue
		}
		job, err := cl.Cancel(ctx, rec.ID)
		var pe *providers.Error
		switch {
		case err == nil:
			io.infof("batch %s (%s, %d requests): cancel requested; %s", rec.ID, rec.Provider, len(rec.IDs), job.Status)
		case errors.As(err, &pe) && pe.Status == 400:
			// Ended already (or ending): nothing left to stop.
			io.infof("batch %s: not cancelled: %s", rec.ID, pe.Message)
		default:
			failed = append(failed, fmt.Errorf("batch %s: %w", rec.ID, err))
		}
	}
	return client, errors.Join(failed...)
}

// collectCancelled waits for the cancelled batches to stop and collects
// them into the output and errors files.
func collectCancelled(ctx context.Context, io *IO, client providers.BatchClient, out, errs string, poll time.Duration) error {
	store, err := checkpoint.Open(checkpoint.Options{Output: out, Errors: errs,
		Warn: func(msg string) { io.warnf("%s", msg) }})
	if err != nil {
		return err
	}
	defer store.Close()
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	sum, err := offline.RunOffline(ctx, offline.OfflineConfig{Client: client, Store: store, PollInterval: poll,
		PollMax: max(poll, time.Minute), Log: io.logLines(), Interrupts: interrupts, Now: io.Now})
	if cerr := store.Close(); err == nil || errors.Is(err, ending.ErrFailures) {
		if cerr != nil {
			return cerr
		}
	}
	if errors.Is(err, ending.ErrFailures) {
		err = nil // the cancelled requests: expected, and in the errors file
	}
	if sum != nil && err == nil {
		io.infof("collected %d answers into %s and %d unfinished requests into %s; rerun with --mode sync to finish them live",
			sum.Succeeded, out, sum.Failed, errs)
	}
	return err
}

// batchClientFor builds the client of a recorded batch. The record's base
// URL holds no credentials: when the environment's base URL names the same
// endpoint, it is used instead, with its userinfo.
func batchClientFor(io *IO, rec offline.BatchRecord, baseURL string) (providers.BatchClient, error) {
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
