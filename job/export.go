package job

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/export"
	"github.com/llmrun/llmrun/internal/outfile"
	"github.com/llmrun/llmrun/source"
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
	recorded := "" // the input the state file records
	if st, err := checkpoint.Status(o.Output); err == nil {
		if st.Errors != "" {
			opts.Errors = st.Errors
		}
		recorded = st.Input
	}
	if o.Input != "" {
		format, err := source.ParseInputFormat(o.InputFormat, o.Input)
		if err != nil {
			return usage(err)
		}
		src := &source.Source{Path: o.Input, Format: format, Stdin: io.In, SpoolDir: filepath.Dir(o.Output)}
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
	if err := exportClash(o, opts.Errors, recorded, to); err != nil {
		return err
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
	// Owner-only, as the output it is made from (answers, prompts, error
	// messages); a file that exists keeps its mode, so a chmod stands.
	w, err := outfile.Create(to, 0o600)
	if err != nil {
		return usagef("export: %v", err)
	}
	defer w.Abort() // after Commit, nothing to drop
	bw := bufio.NewWriterSize(w, 1<<20)
	c, err := writeTable(opts, o.Format, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = w.Commit()
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

// exportClash refuses a table file that is the checkpoint's own data or
// the input: writing it would replace what it is made from.
func exportClash(o ExportOptions, errorsFile, recorded, to string) error {
	reads := append(checkpointRoles(o.Output, errorsFile), outfile.Role{Flag: "--input", Path: o.Input},
		outfile.Role{Flag: "the run's input", Path: recorded})
	if err := outfile.Distinct(reads, []outfile.Role{{Flag: "export -o", Path: to}}); err != nil {
		return usage(err)
	}
	return nil
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
