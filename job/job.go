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
	"log/slog"
	"strings"
	"time"

	"github.com/llmrun/llmrun/logging"
)

// IO is where a command reads and writes, and its environment; tests
// replace it.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// ErrIsTerminal selects the progress bar over plain log lines.
	ErrIsTerminal bool
	// Width reads the terminal's width for the progress bar; nil means 80.
	Width func() int
	// Getenv reads the environment (API keys, base URLs).
	Getenv func(string) string
	// Log is the command's logger (--log-format, -v); nil means lines on
	// Err. JSONLogs reports --log-format json: progress is then logged,
	// never drawn.
	Log      *slog.Logger
	JSONLogs bool
	// Now reads the clock the daily budgets count days by and the offline
	// route stamps and ages its batches and intents with; nil means
	// time.Now.
	Now func() time.Time
	// MemoryLimit sets the process's soft memory limit (bytes) once the
	// run's shape is known; nil leaves the runtime's (tests run in-process).
	MemoryLimit func(int64)
	// GCPercent sets the collector's GOGC and returns the previous one
	// (debug.SetGCPercent); nil leaves it alone (GOGC set by the user, or
	// tests run in-process).
	GCPercent func(int) int
}

// prepareGCPercent is the GOGC of a run's preparation (the input check and
// the checkpoint's load): their garbage is short-lived parse buffers over a
// live heap of a few MB, collected ~135 times at 1M lines with GOGC 100;
// 200 cut the 1M rerun's wall to ~0.89x (1.73 vs 1.95 s) for ~4 MiB more at
// the peaks of the rerun (44 vs 41 MiB) and of the run (54.5 vs 50.6 MiB,
// now the input check's), both under issue 28's 64 MB. Where the live heap
// passes the soft memory limit (10M lines), the limit paces the collector.
const prepareGCPercent = 200

// logger is io.Log, or a logger of plain lines on io.Err.
func (io *IO) logger() *slog.Logger {
	if io.Log != nil {
		return io.Log
	}
	return logging.New(io.Err, logging.Options{Timestamps: !io.ErrIsTerminal})
}

// warnf logs one warning.
func (io *IO) warnf(format string, args ...any) {
	io.logger().Warn(fmt.Sprintf(format, args...))
}

// infof logs one note.
func (io *IO) infof(format string, args ...any) {
	io.logger().Info(fmt.Sprintf(format, args...))
}

// logLines is an io.Writer whose every line is one note, for the parts
// that write lines (the offline route).
func (io *IO) logLines() io.Writer { return logging.Writer(io.logger(), slog.LevelInfo) }

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

// DerivePath turns x.jsonl or x.csv (either maybe .gz or .zst) into x<suffix>: the default output, errors and
// state paths of an input.
func DerivePath(input, suffix string) string {
	for _, ext := range []string{".gz", ".zst"} { // x.jsonl.gz is read as x.jsonl
		input = strings.TrimSuffix(input, ext)
	}
	if base := strings.TrimSuffix(input, ".csv"); base != input {
		return base + suffix
	}
	return strings.TrimSuffix(input, ".jsonl") + suffix
}
