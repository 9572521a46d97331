package job

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/forecast"
	"github.com/llmrun/llmrun/offline"
	"github.com/llmrun/llmrun/pricing"
)

// StatusOptions are the status command's.
type StatusOptions struct {
	// Path is an output, or an input: then its default output and every
	// --shard output of it that exists are reported, and summed.
	Path string
	// Output, if set, is the output to report; Path is then its input.
	Output string
	// JSON prints a StatusReport as JSON instead of lines of text.
	JSON bool
	// Redis, if set, is a Redis URL whose shared budgets are reported too
	// (or alone, without Path): see BudgetReport.
	Redis string
}

// StatusReport is what status prints with --json.
type StatusReport struct {
	// Input is the input the counts are against, "" if unknown.
	Input string `json:"input,omitempty"`
	// Requests counts the input's non-blank lines, -1 if unknown.
	Requests int `json:"requests"`
	Done     int `json:"done"`
	Failed   int `json:"failed"`
	// SpentUSD is the spend recorded in the outputs (see OutputStatus).
	SpentUSD float64 `json:"spent_usd"`
	// Pending is Requests less Done and Failed, -1 if unknown. It counts
	// by id: an answer to an older version of a request (sent again on the
	// next run) counts as done.
	Pending int            `json:"pending"`
	Outputs []OutputStatus `json:"outputs"`
	// Budget is the shared budgets of --redis, if given.
	Budget *BudgetReport `json:"budget,omitempty"`
}

// OutputStatus is one output's part of a StatusReport.
type OutputStatus struct {
	Output string `json:"output"`
	Errors string `json:"errors"`
	Done   int    `json:"done"`
	Failed int    `json:"failed"`
	// Superseded lines await the compaction that ends a run.
	Superseded      int   `json:"superseded"`
	Unfingerprinted int   `json:"unfingerprinted"`
	TornBytes       int64 `json:"torn_bytes"`
	// Malformed lines are counted neither done nor failed.
	Malformed *MalformedStatus `json:"malformed,omitempty"`
	Running   bool             `json:"running"`
	PID       int              `json:"pid,omitempty"`
	Updated   *time.Time       `json:"updated,omitempty"`
	// OpenBatches are provider batches a --mode batch run left open.
	OpenBatches []BatchStatus `json:"open_batches"`
	// SpentUSD is the spend recorded: the cost_usd of the output's and
	// the errors file's lines and of lines reruns dropped; Unpriced counts
	// answers of models without a price, not in it.
	SpentUSD float64 `json:"spent_usd"`
	Unpriced int     `json:"unpriced"`
}

// MalformedStatus locates an output's first malformed line.
type MalformedStatus struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// BatchStatus is one open provider batch, or one being created: a run
// stopped between recording its intent and learning the batch's id (the
// next run finds it at the provider by Intent, or submits its requests
// again).
type BatchStatus struct {
	ID       string    `json:"id"` // "" while being created
	Provider string    `json:"provider"`
	Created  time.Time `json:"created"`
	Requests int       `json:"requests"`
	// Intent is the tag of the intent a batch being created was recorded
	// under.
	Intent string `json:"intent,omitempty"`
}

// String is how status lists the batch.
func (b BatchStatus) String() string {
	detail := fmt.Sprintf("%s, %d requests, since %s", b.Provider, b.Requests, b.Created.Format(time.RFC3339))
	if b.ID == "" {
		return "being created (intent " + b.Intent + ", " + detail + ")"
	}
	return b.ID + " (" + detail + ")"
}

// Status reports the checkpoint(s) o names: done, failed and (when the
// input is known) pending counts, malformed lines, open provider batches
// and the pid of a live run; and with o.Redis, the budgets shared there.
func Status(ctx context.Context, w io.Writer, o StatusOptions) error {
	var budget *BudgetReport
	if o.Redis != "" {
		var err error
		if budget, err = budgetStatus(ctx, o.Redis); err != nil {
			return err
		}
	}
	if o.Path == "" {
		if budget == nil {
			return usagef("status needs an output or input, or --redis")
		}
		if o.JSON {
			return writeJSON(w, budget)
		}
		printBudget(w, budget)
		return nil
	}
	outputs, input, err := statusTargets(o)
	if err != nil {
		return err
	}
	rep := StatusReport{Input: input, Requests: -1, Pending: -1, Budget: budget}
	for _, out := range outputs {
		st, err := checkpoint.Status(out)
		if err != nil {
			return err
		}
		ost := OutputStatus{Output: out, Errors: st.Errors, Done: st.Done, Failed: st.Failed, Superseded: st.Superseded,
			Unfingerprinted: st.Unfingerprinted, TornBytes: st.TornBytes, Running: st.Running, PID: st.PID, OpenBatches: []BatchStatus{}}
		if !st.Updated.IsZero() {
			ost.Updated = &st.Updated
		}
		if m := st.Malformed; m != nil {
			ost.Malformed = &MalformedStatus{File: m.Path, Line: m.Line, Reason: m.Reason, Count: m.Count}
		}
		recs, err := offline.OpenBatches(st.State)
		if err != nil {
			return fmt.Errorf("%s: %w", out, err)
		}
		for _, r := range recs {
			b := BatchStatus{ID: r.ID, Provider: r.Provider, Created: r.Created, Requests: len(r.IDs)}
			if r.ID == "" {
				b.Intent = r.Tag
			}
			ost.OpenBatches = append(ost.OpenBatches, b)
		}
		if spent, unpriced, err := statusSpend(out, st); err == nil {
			ost.SpentUSD, ost.Unpriced = spent.USD(), unpriced
			rep.SpentUSD += spent.USD()
		}
		if rep.Input == "" && len(outputs) == 1 {
			rep.Input = st.Input
		}
		rep.Done += st.Done
		rep.Failed += st.Failed
		rep.Outputs = append(rep.Outputs, ost)
	}
	if rep.Input != "" {
		if n, err := countLines(rep.Input); err == nil {
			rep.Requests, rep.Pending = n, max(n-rep.Done-rep.Failed, 0)
		}
	}
	if o.JSON {
		return writeJSON(w, rep)
	}
	printStatus(w, &rep)
	if budget != nil {
		printBudget(w, budget)
	}
	return nil
}

// statusTargets resolves the outputs to report and their input.
func statusTargets(o StatusOptions) (outputs []string, input string, err error) {
	if o.Output != "" {
		return []string{o.Output}, o.Path, nil
	}
	if isCheckpoint(o.Path) {
		return []string{o.Path}, "", nil
	}
	// An input: its default output and its shards' outputs.
	if c := DerivePath(o.Path, ".out.jsonl"); isCheckpoint(c) {
		outputs = append(outputs, c)
	}
	shards, _ := filepath.Glob(globQuote(DerivePath(o.Path, "")) + ".shard-*-of-*.out.jsonl")
	for _, s := range slices.Sorted(slices.Values(shards)) {
		if isCheckpoint(s) {
			outputs = append(outputs, s)
		}
	}
	if len(outputs) == 0 {
		return nil, "", usage(fmt.Errorf("no checkpoint for %s: neither an output of llmrun nor an input with one (looked for %s and its --shard outputs); name the output with -o: %w",
			o.Path, DerivePath(o.Path, ".out.jsonl"), os.ErrNotExist))
	}
	return outputs, o.Path, nil
}

// isCheckpoint reports whether path is an output llmrun made: it has a state
// file, or it is named like one and exists.
func isCheckpoint(path string) bool {
	if _, err := os.Stat(path + ".state.json"); err == nil {
		return true
	}
	_, err := os.Stat(path)
	return err == nil && strings.HasSuffix(path, ".out.jsonl")
}

// globQuote quotes the pattern characters of a path.
func globQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func printStatus(w io.Writer, rep *StatusReport) {
	for _, o := range rep.Outputs {
		fmt.Fprintf(w, "%s: %d done, %d failed", o.Output, o.Done, o.Failed)
		if len(rep.Outputs) == 1 && rep.Pending >= 0 {
			fmt.Fprintf(w, ", %d pending", rep.Pending)
		}
		if o.Superseded > 0 {
			fmt.Fprintf(w, "; %d superseded lines (dropped at the end of the next run)", o.Superseded)
		}
		if m := o.Malformed; m != nil {
			fmt.Fprintf(w, "; %d malformed lines, not counted (first at %s:%d: %s): run llmrun repair %s", m.Count, m.File, m.Line, m.Reason, o.Output)
		}
		if o.SpentUSD > 0 || o.Unpriced > 0 {
			fmt.Fprintf(w, "; spent %v recorded", pricing.FromUSD(o.SpentUSD))
			if o.Unpriced > 0 {
				fmt.Fprintf(w, " (%d answers of models without a price not counted)", o.Unpriced)
			}
		}
		if n := len(o.OpenBatches); n > 0 {
			var ids []string
			for _, b := range o.OpenBatches {
				ids = append(ids, b.String())
			}
			fmt.Fprintf(w, "; %d open provider batches: %s", n, strings.Join(ids, ", "))
		}
		if o.PID != 0 {
			fmt.Fprintf(w, "; running as pid %d", o.PID)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Outputs) > 1 {
		fmt.Fprintf(w, "all %d outputs: %d done, %d failed", len(rep.Outputs), rep.Done, rep.Failed)
		if rep.Pending >= 0 {
			fmt.Fprintf(w, ", %d pending", rep.Pending)
		}
		fmt.Fprintln(w)
	}
}

// countLines counts the non-blank lines of a file: its requests.
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, errors.New("not a regular file")
	}
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
// errors file's cost_usd, and the cost of the lines compactions dropped
// (superseded answers, failures since answered or retried).
func statusSpend(output string, st checkpoint.StatusReport) (pricing.Cost, int, error) {
	out, err := forecast.ReadRecorded(output, false)
	if err != nil {
		return 0, 0, err
	}
	spent, unpriced := out.Cost, out.Unpriced
	if e, err := forecast.ReadRecorded(st.Errors, false); err == nil {
		spent += e.Cost
		unpriced += e.Unpriced
	}
	legacy := legacyDropped(func(k string) (json.RawMessage, bool) { v, ok := st.State[k]; return v, ok })
	return spent + pricing.FromUSD(st.Dropped) + legacy, unpriced, nil
}
