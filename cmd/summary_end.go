package cmd

import (
	"errors"
	"fmt"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/report"
)

// endsOnTerminal reports whether a run's end is shown as a block for a
// person (a terminal, plain logs) rather than one log line for a file.
func endsOnTerminal(io *IO) bool { return io.ErrIsTerminal && !io.JSONLogs }

func termWidthOf(io *IO) int {
	if io.Width != nil {
		if w := io.Width(); w > 0 {
			return w
		}
	}
	return 80
}

// outcome is the block's heading: how the run ended, in a few words.
func outcome(sum *report.Summary, err error) string {
	var (
		sig *ending.InterruptedError
		ae  *ending.AbortError
		pe  *ending.PendingError
	)
	switch {
	case err == nil:
		return fmt.Sprintf("done: all %d requests succeeded", sum.Requests)
	case errors.Is(err, ending.ErrFailures):
		return fmt.Sprintf("done: %d of %d requests failed", sum.Failed, sum.Requests)
	case errors.As(err, &sig):
		return sig.Error() + ", " + pendingWords(sum.Pending)
	case errors.As(err, &ae):
		return "aborted: " + ae.Cause.Error() + "; " + pendingWords(sum.Pending)
	case errors.As(err, &pe):
		return "stopped: " + pendingWords(sum.Pending)
	}
	return "stopped: " + err.Error()
}

func pendingWords(n int64) string {
	if n == 1 {
		return "1 request pending"
	}
	return fmt.Sprintf("%d requests pending", n)
}
