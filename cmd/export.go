package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/job"
)

func newExportCmd(io *IO) *cobra.Command {
	o := job.ExportOptions{}
	c := outputCmd("export OUTPUT",
		"Write a run's results as a table (CSV, Parquet or JSONL): one row per request",
		`Export reads a run's output and errors file (without changing them) and writes one row per
request: custom_id, status (succeeded, failed, pending), prompt (with --input), answer (an embeddings
request's vectors instead: a list column in Parquet, JSON text in CSV), model, provider, finish
reason, input and output tokens, cost in USD, latency in ms, attempts and error: the table to load
into pandas, DuckDB or a spreadsheet. With --input the rows follow the input, with its prompts and a
pending row for each request not yet answered or failed; answers of ids no longer in it follow.

The table goes to OUTPUT with .out.jsonl replaced by .csv, .parquet or .table.jsonl, or to -o
(- for standard output). Memory stays bounded: rows are streamed, Parquet in row groups.`,
		func(_ context.Context, output string) error {
			o.Output = output
			return job.Export(io, o)
		})
	f := c.Flags()
	f.StringVar(&o.Format, "format", "csv", "csv, parquet or jsonl")
	f.StringVar(&o.Input, "input", "", "the run's input (- for standard input): prompts, input order, pending requests")
	f.StringVar(&o.InputFormat, "input-format", "", "the input's format: jsonl or csv (default: csv for .csv inputs, else jsonl)")
	f.StringVarP(&o.To, "output", "o", "", "the table's file (- for standard output; default: beside OUTPUT)")
	return c
}
