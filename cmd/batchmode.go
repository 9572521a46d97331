package cmd

import (
	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/job"
	"github.com/llmrun/llmrun/offline"
)

// addOfflineFlags adds the flags of the offline route (the providers'
// batch APIs).
func addOfflineFlags(f *pflag.FlagSet, o *job.OfflineOptions) {
	o.Mode = job.ModeSync
	f.Var(&modeFlag{&o.Mode}, "mode", "sync (live API), batch (the provider's batch API: half price, results within 24h) or auto (batch when --batch-threshold requests are pending and the --deadline allows 24h)")
	f.IntVar(&o.Threshold, "batch-threshold", 1000, "with --mode auto, the fewest pending requests worth a provider batch")
	f.Var(&deadlineFlag{d: &o.Deadline}, "deadline", "when results are needed: a duration from now (36h) or an RFC 3339 time; --mode auto uses the batch API only if it is at least 24h away")
	f.DurationVar(&o.PollInterval, "poll-interval", offline.DefaultPollInterval, "with --mode batch, the first wait between polls of a batch (it grows by half up to --poll-max)")
	f.DurationVar(&o.PollMax, "poll-max", offline.DefaultPollMax, "with --mode batch, the longest wait between polls")
	f.IntVar(&o.MaxItems, "batch-max-items", 0, "cap on requests per provider batch (0: the provider's limit)")
	f.Int64Var(&o.MaxBytes, "batch-max-bytes", 0, "cap on bytes per provider batch (0: the provider's limit)")
	f.DurationVar(&o.CreateGrace, "batch-create-grace", offline.DefaultCreateGrace, "how long after an interrupted batch creation a rerun keeps looking for the batch")
	f.MarkHidden("batch-create-grace")
	f.MarkHidden("batch-max-items")
	f.MarkHidden("batch-max-bytes")
}

// modeFlag is --mode: sync, batch or auto.
type modeFlag struct{ m *string }

func (f *modeFlag) String() string { return *f.m }
func (f *modeFlag) Type() string   { return "mode" }
func (f *modeFlag) Set(s string) (err error) {
	*f.m, err = job.ParseMode(s)
	return err
}

// deadlineFlag is --deadline: a duration from now or an RFC 3339 time.
type deadlineFlag struct {
	d   *job.Deadline
	raw string
}

func (f *deadlineFlag) String() string { return f.raw }
func (f *deadlineFlag) Type() string   { return "deadline" }
func (f *deadlineFlag) Set(s string) (err error) {
	*f.d, err = job.ParseDeadline(s)
	f.raw = s
	return err
}
