package job

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmrun/llmrun/checkpoint"
)

// Status prints the done, failed and (given the input) pending counts of
// the run on path, an output file or an input file, and the pid of a live
// run.
func Status(w io.Writer, path string) error {
	input := ""
	if !strings.HasSuffix(path, ".out.jsonl") {
		input = path
		path = DerivePath(path, ".out.jsonl")
	}
	st, err := checkpoint.Status(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d done, %d failed", path, st.Done, st.Failed)
	if input != "" {
		if n, err := countLines(input); err == nil {
			fmt.Fprintf(w, ", %d pending", max(n-st.Done-st.Failed, 0))
		}
	}
	if m := st.Malformed; m != nil {
		fmt.Fprintf(w, "; %d malformed lines, not counted (first at %s:%d: %s): run llmrun repair %s", m.Count, m.Path, m.Line, m.Reason, path)
	}
	if st.PID != 0 {
		fmt.Fprintf(w, "; running as pid %d", st.PID)
	}
	fmt.Fprintln(w)
	return nil
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
