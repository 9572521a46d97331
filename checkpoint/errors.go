package checkpoint

import (
	"errors"
	"fmt"
)

var (
	// ErrAlreadyDone is returned (wrapped) by AppendResult and AppendError for
	// an id that already has a result: the output holds each id exactly once.
	ErrAlreadyDone = errors.New("checkpoint: custom_id already done")
	// ErrBadLine is returned (wrapped) for a line that contains a newline or
	// whose "custom_id" is not the id it is appended under; a later scan would
	// misread it.
	ErrBadLine = errors.New("checkpoint: bad line")
	// ErrClosed is returned by every method of a closed Store but Close.
	ErrClosed = errors.New("checkpoint: store is closed")
)

// LockedError reports that another process holds the checkpoint's lock.
type LockedError struct {
	Output string // the output file
	Lock   string // the lock file
	PID    int    // the holder's pid as it wrote it; 0 if unknown
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("checkpoint: %s is in use by another llmrun (pid %d); wait for it to finish or stop it", e.Output, e.PID)
	}
	return fmt.Sprintf("checkpoint: %s is in use by another process (lock %s)", e.Output, e.Lock)
}

// CorruptError reports a malformed line that is not the file's last line, so
// it cannot be a torn write: bytes cut out of the middle, NULs written into a
// line, a line edited by hand. The run stops rather than guess (exit 2); Repair
// moves such lines aside so that the next run redoes their requests.
type CorruptError struct {
	Path   string // the file: the output or the errors file
	Output string // the output whose checkpoint it belongs to, for the repair command
	Line   int    // 1-based line number of the first malformed line
	Offset int64  // byte offset of that line's start
	Reason string // what is wrong with it
	Count  int    // malformed lines in the file, at least 1
}

func (e *CorruptError) Error() string {
	more := ""
	if e.Count > 1 {
		more = fmt.Sprintf("; %d malformed lines in all", e.Count)
	}
	return fmt.Sprintf("checkpoint: %s:%d: %s (byte offset %d%s); run `llmrun repair %s` to move malformed lines to %s, then rerun: their requests are sent again",
		e.Path, e.Line, e.Reason, e.Offset, more, e.Output, RejectedPath(e.Path))
}

// StateError reports a state file ("<output>.state.json") that cannot be
// used: not valid JSON, or written by a newer llmrun. It is an input error
// (exit 2). The state file records the run's open provider batches, so it is
// never replaced without the user's say.
type StateError struct {
	Path   string // the state file
	Reason string // what is wrong with it
	Fix    string // what the user can do
}

func (e *StateError) Error() string {
	return fmt.Sprintf("checkpoint: state file %s %s; %s", e.Path, e.Reason, e.Fix)
}

// WriteError reports a failed write or fsync of the output or errors file.
// After a failed write the file was truncated back to its last complete line
// if RolledBack; otherwise the Store refuses further appends and the next Open
// repairs the torn tail. After a failed fsync the Store refuses further
// appends: what the kernel could not persist is unknown.
type WriteError struct {
	Path       string
	Op         string // "write", "fsync" or "truncate"
	Err        error
	RolledBack bool
}

func (e *WriteError) Error() string {
	s := fmt.Sprintf("checkpoint: %s %s: %v", e.Op, e.Path, e.Err)
	if e.RolledBack {
		s += " (rolled back to the last complete line)"
	}
	return s
}

func (e *WriteError) Unwrap() error { return e.Err }
