package cmd

import (
	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/job"
)

// addSourceFlags adds the flags that say how the input is read.
func addSourceFlags(f *pflag.FlagSet, o *job.SourceOptions) {
	f.BoolVar(&o.LossyUTF8, "lossy-utf8", false, "replace invalid UTF-8 in the input with U+FFFD (and warn once) instead of stopping at the first such line")
	f.StringVar(&o.Template, "template", "", "Go text/template FILE that renders each input record's fields ({{.topic}}) into its prompt; the fields are kept in the output as llmrun.vars")
	f.StringVar(&o.InputFormat, "input-format", "", "jsonl, or csv (a header row names the fields; needs --template) (default: csv for .csv inputs, else jsonl)")
}
