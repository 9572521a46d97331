package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/job"
)

func newCancelCmd(io *IO) *cobra.Command {
	o := job.CancelOptions{}
	c := outputCmd("cancel OUTPUT",
		"Cancel the open provider batches of a --mode batch run",
		`Cancel the provider batches recorded as open in OUTPUT's state file (OUTPUT.state.json).
Requests a batch had already answered keep their results. Unless a run holds OUTPUT (it then
collects them itself) or --no-wait is given, cancel waits for the batches to stop and collects
them: answers into OUTPUT, the cancelled requests into the errors file, so that a rerun with
--mode sync finishes them live. OUTPUT may also be the input file (its default output is used).`,
		func(ctx context.Context, output string) error {
			o.Output = output
			return job.Cancel(ctx, io, o)
		})
	f := c.Flags()
	f.StringVar(&o.BaseURL, "base-url", "", "API base URL (default: the one recorded with each batch)")
	f.BoolVar(&o.NoWait, "no-wait", false, "only ask the provider to cancel; a later run collects the results")
	f.DurationVar(&o.PollInterval, "poll-interval", 5*time.Second, "first wait between polls while waiting for the batches to stop")
	return c
}
