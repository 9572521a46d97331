package cmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/checkpoint"
)

func newStatusCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "status OUTPUT-or-INPUT",
		Short: "Show done, failed and pending counts of a run, and the pid of a live run",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path := args[0]
			input := ""
			if !strings.HasSuffix(path, ".out.jsonl") {
				input = path
				path = derivePath(path, ".out.jsonl")
			}
			st, err := checkpoint.Status(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "%s: %d done, %d failed", path, st.Done, st.Failed)
			if input != "" {
				if n, err := countLines(input); err == nil {
					fmt.Fprintf(io.Out, ", %d pending", max(n-st.Done-st.Failed, 0))
				}
			}
			if m := st.Malformed; m != nil {
				fmt.Fprintf(io.Out, "; %d malformed lines, not counted (first at %s:%d: %s): run llmrun repair %s", m.Count, m.Path, m.Line, m.Reason, path)
			}
			if st.PID != 0 {
				fmt.Fprintf(io.Out, "; running as pid %d", st.PID)
			}
			fmt.Fprintln(io.Out)
			return nil
		},
	}
}

// countLines counts the non-blank lines of a file: its requests.
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	n, blank := 0, true
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			if !blank {
				n++
			}
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		switch b {
		case '\n':
			if !blank {
				n++
			}
			blank = true
		case ' ', '\t', '\r':
		default:
			blank = false
		}
	}
}
