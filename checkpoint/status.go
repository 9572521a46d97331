package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// StatusReport is what Status learns about a checkpoint.
type StatusReport struct {
	Output string // the output file
	Errors string // its errors file
	Input  string // the input of the last run, as the state file records it; "" if unknown
	Done   int    // ids the output answers
	Failed int    // ids with a failure record not answered since
	// Superseded counts output lines a later line of their id replaced (a
	// changed request answered again); the run that made them drops them at
	// its end, or the next run does if it was killed.
	Superseded int
	// Dropped is the Options.Tally sum of the lines compactions dropped.
	Dropped float64
	// Unfingerprinted counts answers written without a request fingerprint
	// (by an older llmrun): they answer their id whatever its request is now.
	Unfingerprinted int
	// TornBytes is the length of an incomplete last line of the output. A live
	// run may simply be in the middle of writing it; otherwise the next Open
	// drops it.
	TornBytes int64
	Running   bool // a live process holds the lock
	PID       int  // its pid, if Running and known
	Settings  map[string]string
	State     map[string]json.RawMessage // what the run recorded (open provider batches)
	Updated   time.Time                  // when the state file was last written; zero if none
	// Malformed is the first malformed line of the output or the errors
	// file, with the count of them all; nil if there is none. Such lines count
	// as neither done nor failed: Repair moves them aside and the next run
	// redoes their requests.
	Malformed *CorruptError
}

// Status reads the checkpoint at output without locking or changing it: the
// answered and failed counts, the recorded input, settings and state, and,
// if a live run holds the lock, its pid. It is safe while a run appends. Its
// memory is the Store's: about 10 bytes per id. Malformed lines are
// reported in Malformed, not counted; if neither the output nor its state
// file exists the error wraps os.ErrNotExist.
func Status(output string) (StatusReport, error) {
	r := StatusReport{Output: output, Errors: ErrorsPath(output)}
	sc, found, err := readSidecar(StatePath(output))
	if err != nil {
		return r, err
	}
	if found {
		sc.settle()
		r.Settings, r.State, r.Updated, r.Dropped = sc.Settings, sc.State, sc.Updated, sc.Dropped
		if sc.Errors != "" {
			r.Errors = sc.Errors
		}
		if sc.Input != nil {
			r.Input = sc.Input.Path
		}
	}
	r.Running, r.PID, err = lockHolder(output)
	if err != nil {
		return r, err
	}

	x := loaded{output: output, errors: r.Errors}
	x.outR, _ = openLineReader(output) // nil if there is none: nothing to read back
	defer x.outR.close()
	x.errR, _ = openLineReader(r.Errors)
	defer x.errR.close()
	exists, err := loadFile(output, x.loadOutput)
	if err != nil {
		return r, err
	}
	if !exists && !found {
		return r, fmt.Errorf("checkpoint: no checkpoint at %s: %w", output, os.ErrNotExist)
	}
	r.TornBytes = x.outRes.Size - x.outRes.Good
	if _, err := loadFile(r.Errors, x.loadErrors); err != nil {
		return r, err
	}
	r.Done, r.Failed, r.Superseded, r.Unfingerprinted, r.Malformed = x.done.n, x.failed.n, x.outStale, x.unfingerprinted(), x.malformed
	return r, nil
}

// openExisting opens path for reading; f is nil, and err too, if there is
// no such file. op names the caller in an error.
func openExisting(path, op string) (f *os.File, err error) {
	f, err = os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", op, err)
	}
	return f, nil
}

// loadFile runs one of loaded's readers over the file at path; exists is
// false if there is no such file.
func loadFile(path string, read func(io.Reader, int64) error) (exists bool, err error) {
	f, err := openExisting(path, "status")
	if f == nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return true, fmt.Errorf("checkpoint: status: %w", err)
	}
	return true, read(f, fi.Size())
}
