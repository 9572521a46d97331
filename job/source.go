package job

import (
	"os"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/source"
)

// SourceOptions say how the input is read.
type SourceOptions struct {
	// LossyUTF8 replaces invalid UTF-8 with U+FFFD (and warns once)
	// instead of rejecting the line.
	LossyUTF8 bool
	// Template is a Go text/template file rendering each input record's
	// fields into a prompt.
	Template string
	// InputFormat is jsonl or csv; empty picks by the input's name.
	InputFormat string

	tmpl   *source.Template
	format source.InputFormat
}

// load reads the template and settles the input format, before anything
// is opened: a bad template or format is a usage error (exit 2).
func (s *SourceOptions) load(input string) error {
	format, err := source.ParseInputFormat(s.InputFormat, input)
	if err != nil {
		return usage(err)
	}
	s.format = format
	if s.Template == "" {
		if format == source.CSV {
			return usagef("CSV input needs --template FILE to make each row's prompt")
		}
		return nil
	}
	text, err := os.ReadFile(s.Template)
	if err != nil {
		return usagef("--template: %v", err)
	}
	if s.tmpl, err = source.ParseTemplate(s.Template, string(text)); err != nil {
		return usagef("--template: %v", err)
	}
	return nil
}

// parser is the input parser for requests sent in format.
func (o *BatchOptions) parser(format providers.Format) source.Parser {
	return source.Parser{
		Format:    format,
		Defaults:  source.LineDefaults{Model: o.Model, MaxTokens: o.MaxTokens, System: o.System, Priority: o.Priority},
		LossyUTF8: o.Source.LossyUTF8,
		Template:  o.Source.tmpl,
	}
}

// checked reports what the check pass changed in the input: one warning
// for all the lines whose invalid UTF-8 was replaced.
func (o *BatchOptions) checked(io *IO, res source.CheckResult) {
	if res.LossyLines > 0 {
		io.warnf("--lossy-utf8: replaced invalid UTF-8 with U+FFFD in %d line(s) of %s (first: line %d)", res.LossyLines, inputName(o.Input), res.LossyFirst)
	}
}
