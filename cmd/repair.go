package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/job"
)

func newRepairCmd(io *IO) *cobra.Command {
	var errorsPath string
	c := outputCmd("repair OUTPUT",
		"Move malformed lines of a checkpoint aside, so that the next run redoes their requests",
		`Repair moves the malformed lines of OUTPUT and of its errors file (bytes cut out, NULs, a
line changed after llmrun wrote it, a torn last line) to OUTPUT.rejected and ERRORS.rejected,
keeping every well-formed line. Rerun the batch afterwards: the requests of the moved lines are
sent again. It takes the checkpoint's lock, so it fails while a run is using OUTPUT.`,
		func(_ context.Context, output string) error {
			return job.Repair(io.Out, output, errorsPath)
		})
	c.Flags().StringVar(&errorsPath, "errors", "", "errors file (default: the one the checkpoint's state file records)")
	return c
}
