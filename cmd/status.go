package cmd

import (
	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/job"
)

func newStatusCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "status OUTPUT-or-INPUT",
		Short: "Show done, failed and pending counts of a run, and the pid of a live run",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return job.Status(io.Out, args[0])
		},
	}
}
