package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// CancelOptions are the cancel command's flags.
type CancelOptions struct {
	Output       string
	BaseURL      string
	NoWait       bool
	PollInterval time.Duration
}

func newCancelCmd(io *IO) *cobra.Command {
	o := &CancelOptions{}
	c := &cobra.Command{
		Use:   "cancel OUTPUT",
		Short: "Cancel the open provider batches of a --mode batch run",
		Long: `Cancel the provider batches recorded as open in OUTPUT's state file (OUTPUT.state.json).
Requests a batch had already answered keep their results. Unless a run holds OUTPUT (it then
collects them itself) or --no-wait is given, cancel waits for the batches to stop and collects
them: answers into OUTPUT, the cancelled requests into the errors file, so that a rerun with
--mode sync finishes them live. OUTPUT may also be the input file (its default output is used).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Output = args[0]
			return runCancel(c.Context(), io, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.BaseURL, "base-url", "", "API base URL (default: the one recorded with each batch)")
	f.BoolVar(&o.NoWait, "no-wait", false, "only ask the provider to cancel; a later run collects the results")
	f.DurationVar(&o.PollInterval, "poll-interval", 5*time.Second, "first wait between polls while waiting for the batches to stop")
	return c
}

func runCancel(ctx context.Context, io *IO, o *CancelOptions) error {
	out := o.Output
	if _, err := os.Stat(out + ".state.json"); err != nil {
		out = derivePath(out, ".out.jsonl")
	}
	st, err := checkpoint.Status(out)
	if err != nil {
		return &usageError{fmt.Errorf("no checkpoint at %s: %w", o.Output, err)}
	}
	recs, err := runner.OpenBatches(st.State)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		fmt.Fprintf(io.Err, "llmrun: %s has no open batches\n", out)
		return nil
	}
	var failed []error
	var client providers.BatchClient
	for _, rec := range recs {
		cl, err := batchClientFor(io, rec, o.BaseURL)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		client = cl
		job, err := cl.Cancel(ctx, rec.ID)
		var pe *providers.Error
		switch {
		case err == nil:
			fmt.Fprintf(io.Err, "llmrun: batch %s (%s, %d requests): %s\n", rec.ID, rec.Provider, len(rec.IDs), job.Status)
		case errors.As(err, &pe) && pe.Status == 400:
			// Ended already (or ending): nothing left to stop.
			fmt.Fprintf(io.Err, "llmrun: batch %s: not cancelled: %s\n", rec.ID, pe.Message)
		default:
			failed = append(failed, fmt.Errorf("batch %s: %w", rec.ID, err))
		}
	}
	if len(failed) > 0 {
		return errors.Join(failed...)
	}
	switch {
	case o.NoWait:
		fmt.Fprintf(io.Err, "llmrun: the next run on %s collects the results\n", out)
		return nil
	case st.Running:
		fmt.Fprintf(io.Err, "llmrun: the run holding %s (pid %d) collects the results\n", out, st.PID)
		return nil
	}
	errs := st.Errors
	if errs == "" {
		errs = derivePath(out, ".errors.jsonl")
	}
	store, err := checkpoint.Open(checkpoint.Options{Output: out, Errors: errs,
		Warn: func(msg string) { fmt.Fprintf(io.Err, "llmrun: warning: %s\n", msg) }})
	if err != nil {
		return err
	}
	defer store.Close()
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(interrupts)
	sum, err := runner.RunOffline(ctx, runner.OfflineConfig{Client: client, Store: store, PollInterval: o.PollInterval,
		PollMax: max(o.PollInterval, time.Minute), Log: io.Err, Interrupts: interrupts})
	if cerr := store.Close(); err == nil || errors.Is(err, runner.ErrFailures) {
		if cerr != nil {
			return cerr
		}
	}
	if errors.Is(err, runner.ErrFailures) {
		err = nil // the cancelled requests: expected, and in the errors file
	}
	if sum != nil && err == nil {
		fmt.Fprintf(io.Err, "llmrun: collected %d answers into %s and %d unfinished requests into %s; rerun with --mode sync to finish them live\n",
			sum.Succeeded, out, sum.Failed, errs)
	}
	return err
}
