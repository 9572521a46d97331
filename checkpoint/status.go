package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// StatusReport is what Status learns about a checkpoint.
type StatusReport struct {
	Output string // the output file
	Errors string // the errors file recorded in the state file; "" if unknown
	Done   int    // distinct ids in the output
	Failed int    // distinct ids in the errors file that are not done
	// TornBytes is the length of an incomplete last line of the output. A live
	// run may simply be in the middle of writing it; otherwise the next Open
	// drops it.
	TornBytes int64
	Running   bool // a live process holds the lock
	PID       int  // its pid, if Running and known
	Input     *InputInfo
	Settings  map[string]string
	State     map[string]json.RawMessage
	Updated   time.Time // when the state file was last written; zero if none
	// Malformed is the first malformed line of the output or the errors
	// file, with the count of them all; nil if there is none. Such lines count
	// as neither done nor failed: Repair moves them aside and the next run
	// redoes their requests.
	Malformed *CorruptError
}

// Status reads the checkpoint at output without locking or changing it: the
// done and failed counts, the recorded input, settings and state, and, if a
// live run holds the lock, its pid. It is safe while a run appends. Malformed
// lines are reported in Malformed, not counted; if neither the output nor its
// state file exists the error wraps os.ErrNotExist.
func Status(output string) (StatusReport, error) {
	r := StatusReport{Output: output}
	sc, found, err := readSidecar(statePath(output))
	if err != nil {
		return r, err
	}
	if found {
		r.Errors, r.Input, r.Settings, r.State, r.Updated = sc.Errors, sc.Input, sc.Settings, sc.State, sc.Updated
	}
	r.Running, r.PID, err = lockHolder(output)
	if err != nil {
		return r, err
	}

	done := map[string]struct{}{}
	f, err := os.Open(output)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if !found {
			return r, fmt.Errorf("checkpoint: no checkpoint at %s: %w", output, os.ErrNotExist)
		}
	case err != nil:
		return r, fmt.Errorf("checkpoint: status: %w", err)
	default:
		res, err := scan(f, scanOpts{path: output, needID: true}, func(l *scanLine) error {
			if l.Bad != "" {
				r.Malformed = corrupt(r.Malformed, l, output, output)
				return nil
			}
			done[string(l.ID)] = struct{}{}
			return nil
		})
		f.Close()
		if err != nil {
			return r, err
		}
		r.TornBytes = res.Size - res.Good
	}
	r.Done = len(done)

	if r.Errors == "" {
		return r, nil
	}
	f, err = os.Open(r.Errors)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("checkpoint: status: %w", err)
	}
	defer f.Close()
	failed := map[string]struct{}{}
	if _, err := scan(f, scanOpts{path: r.Errors}, func(l *scanLine) error {
		if l.Bad != "" {
			r.Malformed = corrupt(r.Malformed, l, r.Errors, output)
			return nil
		}
		if _, ok := done[string(l.ID)]; l.ID != nil && !ok {
			failed[string(l.ID)] = struct{}{}
		}
		return nil
	}); err != nil {
		return r, err
	}
	r.Failed = len(failed)
	return r, nil
}
