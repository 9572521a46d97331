package job

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/export"
	"github.com/llmrun/llmrun/runner"
)

// ExportOptions are what the export command takes.
type ExportOptions struct {
	// Output is the checkpoint to export (a run's output file); its errors
	// file is the one its state records, else the default beside it.
	Output string
	// Input, if set, is the run's input: the rows get its prompts, in its
	// order, and its unanswered requests a pending row.
	Input string
	// Format is csv, parquet or jsonl.
	Format string
	// To is the table's file; "" derives it from Output (x.out.jsonl:
	// x.csv, x.parquet, x.table.jsonl); "-" writes to standard output.
	To string
	// InputFormat is the input's format (jsonl or csv; "" picks by name).
	InputFormat string
}

// Export writes the table of o.Output's requests and logs how many rows of
// each status it wrote. The file appears whole or not at all (a temporary
// file renamed over it).
func Export(io *IO, o ExportOptions) error {
	if !strings.Contains(","+strings.Join(export.Formats, ",")+",", ","+o.Format+",") {
		return usagef("--format %q: want csv, parquet or jsonl", o.Format)
	}
	if _, err := os.Stat(o.Output); err != nil {
		return usagef("%s: %v", o.Output, errors.Unwrap(err))
	}
	opts := export.Options{Output: o.Output, Errors: checkpoint.ErrorsPath(o.Output)}
	if st, err := checkpoint.Status(o.Output); err == nil && st.Errors != "" {
		opts.Errors = st.Errors
	}
	if o.Input != "" {
		format, err := runner.ParseInputFormat(o.InputFormat, o.Input)
		if err != nil {
			return usage(err)
		}
		src := &runner.Source{Path: o.Input, Format: format, Stdin: io.In, SpoolDir: filepath.Dir(o.Output)}
		if err := src.Open(); err != nil {
			return err
		}
		defer src.Close()
		opts.Input = src
	}
	to := o.To
	if to == "" {
		to = exportPath(o.Output, o.Format)
	}
	if to == "-" {
		bw := bufio.NewWriterSize(io.Out, 1<<20)
		c, err := writeTable(opts, o.Format, bw)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if err == nil {
			io.infof("export: %d rows (%d succeeded, %d failed, %d pending)", c.Succeeded+c.Failed+c.Pending, c.Succeeded, c.Failed, c.Pending)
		}
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(to), "."+filepath.Base(to)+".tmp*")
	if err != nil {
		return usagef("export: %v", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing to remove
	bw := bufio.NewWriterSize(tmp, 1<<20)
	c, err := writeTable(opts, o.Format, bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), to)
	}
	if err != nil {
		return err
	}
	io.infof("export: %s: %d rows (%d succeeded, %d failed, %d pending)", to, c.Succeeded+c.Failed+c.Pending, c.Succeeded, c.Failed, c.Pending)
	return nil
}

func writeTable(opts export.Options, format string, w *bufio.Writer) (export.Counts, error) {
	tw, err := export.NewWriter(format, w)
	if err != nil {
		return export.Counts{}, usage(err)
	}
	c, err := export.Export(opts, tw)
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	return c, err
}

// exportPath is the default table file of an output.
func exportPath(output, format string) string {
	base := strings.TrimSuffix(output, ".jsonl")
	base = strings.TrimSuffix(base, ".out")
	if format == "jsonl" {
		return base + ".table.jsonl"
	}
	return base + "." + format
}
