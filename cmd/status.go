package cmd

import (
	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/job"
)

func newStatusCmd(io *IO) *cobra.Command {
	o := job.StatusOptions{}
	c := &cobra.Command{
		Use:   "status [OUTPUT-or-INPUT] [--redis URL]",
		Short: "Show done, failed and pending counts of a run, its open provider batches, the pid of a live run, and shared budgets",
		Long: `Status reads a checkpoint without changing it. Given an output (any file a run wrote with -o),
it reports that output; given an input, its default output and every --shard output of it found
beside it, and their sum; with -o, that output, counted against the input given. Pending counts
the input's lines less the ids done or failed.

With --redis, it also reports (or, without an argument, only reports) every budget shared on that
Redis, as all the processes sharing it see it: the limits in force and those learned from headers,
the buckets' levels, a pause, the requests in flight and waiting by priority, and the processes
(host and pid) holding or waiting for them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Path = args[0]
			}
			return job.Status(c.Context(), io.Out, o)
		},
	}
	c.Flags().StringVarP(&o.Output, "output", "o", "", "the output to report (the argument is then its input)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	c.Flags().StringVar(&o.Redis, "redis", "", "redis://[user:pass@]host:port/db: report the budgets shared there (see batch --redis)")
	return c
}
