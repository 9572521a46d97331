package job

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/runner"
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
	if spent, unpriced, err := statusSpend(path, st); err == nil && (spent > 0 || unpriced > 0) {
		fmt.Fprintf(w, "; spent %v recorded", spent)
		if unpriced > 0 {
			fmt.Fprintf(w, " (%d answers of models without a price not counted)", unpriced)
		}
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

// statusSpend is the spend recorded in a checkpoint: the output's and the
// errors file's cost_usd, and the cost of failed lines reruns dropped.
func statusSpend(output string, st checkpoint.StatusReport) (pricing.Cost, int, error) {
	out, err := runner.ReadRecorded(output, false)
	if err != nil {
		return 0, 0, err
	}
	spent, unpriced := out.Cost, out.Unpriced
	if st.Errors != "" {
		if e, err := runner.ReadRecorded(st.Errors, false); err == nil {
			spent += e.Cost
			unpriced += e.Unpriced
		}
	}
	var dropped float64
	if raw, ok := st.State[droppedCostKey]; ok && json.Unmarshal(raw, &dropped) == nil {
		spent += pricing.FromUSD(dropped)
	}
	return spent, unpriced, nil
}
