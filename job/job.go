// Package job runs one llmrun command from its options: it turns what the
// user asked for (flags now, a config file later) into the parts the
// runner needs — the checkpoint, the budget, the routes from the provider
// registry, the retry policy and guard — chooses the live or the batch API
// route, and runs it. cmd only fills the options, makes one call here and
// maps the error to an exit code.
package job

import (
	"fmt"
	"io"
	"strings"
)

// IO is where a command reads and writes, and its environment; tests
// replace it.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// ErrIsTerminal selects the progress bar over plain log lines.
	ErrIsTerminal bool
	// Getenv reads the environment (API keys, base URLs).
	Getenv func(string) string
}

// warnf prints one warning line on stderr.
func (io *IO) warnf(format string, args ...any) {
	fmt.Fprintf(io.Err, "llmrun: warning: "+format+"\n", args...)
}

// UsageError marks a bad invocation: a flag or option that cannot work
// (exit 2, nothing sent).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usagef returns a *UsageError with a formatted message.
func usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// usage wraps err, if any, as a *UsageError.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{err}
}

// DerivePath turns x.jsonl (or x.jsonl.gz, x.jsonl.zst) into x<suffix>: the default output, errors and
// state paths of an input.
func DerivePath(input, suffix string) string {
	for _, ext := range []string{".gz", ".zst"} { // x.jsonl.gz is read as x.jsonl
		input = strings.TrimSuffix(input, ext)
	}
	return strings.TrimSuffix(input, ".jsonl") + suffix
}
