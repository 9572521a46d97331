package cmd

import (
	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/job"
)

func newStatusCmd(io *IO) *cobra.Command {
	o := job.StatusOptions{}
	c := &cobra.Command{
		Use:   "status OUTPUT-or-INPUT",
		Short: "Show done, failed and pending counts of a run, its open provider batches, and the pid of a live run",
		Long: `Status reads a checkpoint without changing it. Given an output (any file a run wrote with -o),
it reports that output; given an input, its default output and every --shard output of it found
beside it, and their sum; with -o, that output, counted against the input given. Pending counts
the input's lines less the ids done or failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Path = args[0]
			return job.Status(io.Out, o)
		},
	}
	c.Flags().StringVarP(&o.Output, "output", "o", "", "the output to report (the argument is then its input)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	return c
}
