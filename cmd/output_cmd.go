package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// outputCmd is a command about one run's checkpoint, named by its one
// argument OUTPUT (cancel, export, repair): the text, the argument check
// and the call into job with the argument, which each such command would
// otherwise spell out.
func outputCmd(use, short, long string, run func(ctx context.Context, output string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return run(c.Context(), args[0])
		},
	}
}
