package job

import (
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// SourceOptions say how the input is read.
type SourceOptions struct {
	// LossyUTF8 replaces invalid UTF-8 with U+FFFD (and warns once)
	// instead of rejecting the line.
	LossyUTF8 bool
}

// parser is the input parser for requests sent in format.
func (o *BatchOptions) parser(format providers.Format) runner.Parser {
	return runner.Parser{
		Format:    format,
		Defaults:  runner.LineDefaults{Model: o.Model, MaxTokens: o.MaxTokens, System: o.System},
		LossyUTF8: o.Source.LossyUTF8,
	}
}

// checked reports what the check pass changed in the input: one warning
// for all the lines whose invalid UTF-8 was replaced.
func (o *BatchOptions) checked(io *IO, res runner.CheckResult) {
	if res.LossyLines > 0 {
		io.warnf("--lossy-utf8: replaced invalid UTF-8 with U+FFFD in %d line(s) of %s (first: line %d)", res.LossyLines, inputName(o.Input), res.LossyFirst)
	}
}
