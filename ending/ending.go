// Package ending is how a run ends, the same whichever route ran it (the
// live run, package runner, or the batch-API route, package offline): the
// errors both return beside their summary, which cmd maps to exit codes
// in one place, and the exit status of a signal. It is apart so that the
// batch-API route and cmd need not import the live run to say how a run
// ended.
package ending

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// AbortError stops a run on a condition no retry can fix (bad key, spend
// cap, an outage longer than --max-outage). Nothing pending is lost: the
// run can be resumed.
type AbortError struct{ Cause error }

func (e *AbortError) Error() string {
	return fmt.Sprintf("run aborted: %v; everything not done is still pending, fix the cause and rerun the same command to resume", e.Cause)
}
func (e *AbortError) Unwrap() error { return e.Cause }

// InterruptedError reports a run stopped by a signal after draining.
type InterruptedError struct{ Signal os.Signal }

func (e *InterruptedError) Error() string { return "interrupted " + SignalWords(e.Signal) }

// SignalWords names a stopping signal as the person who sent it knows it:
// "(Ctrl-C)" for SIGINT, "(SIGTERM)" for SIGTERM ("interrupt" is what
// Go calls SIGINT, and "interrupted by interrupt" says nothing).
func SignalWords(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "(Ctrl-C)"
	case syscall.SIGTERM:
		return "(SIGTERM)"
	}
	return fmt.Sprintf("(%v)", sig)
}

// PendingError says a run ended, with nothing else wrong, while some
// requests were neither answered nor failed: exit 0 must mean every request
// succeeded, so this is an error. The rerun does them.
type PendingError struct {
	Pending int64
	// Cause is why they were left, when known.
	Cause error
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("%d requests still pending (neither answered nor failed): %v; rerun the same command to finish them", e.Pending, e.Cause)
}
func (e *PendingError) Unwrap() error { return e.Cause }

// ErrFailures means the run finished but some requests failed; they are in
// the errors file.
var ErrFailures = errors.New("some requests failed")

// ExitSignalCode is the conventional exit status for a signal (128+n).
func ExitSignalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}
