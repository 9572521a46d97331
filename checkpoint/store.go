package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Group-commit defaults for FsyncBatch.
const (
	DefaultSyncInterval = 50 * time.Millisecond
	DefaultSyncLines    = 1024
)

// Options configures Open. Output and Errors are required.
type Options struct {
	// Output is the results file, one JSON line per succeeded request. It is
	// the checkpoint: its lines say which ids are done.
	Output string
	// Errors is the errors file, one JSON line per failed request.
	Errors string
	// Fsync is the durability mode; the zero value is FsyncBatch.
	Fsync FsyncMode
	// SyncInterval and SyncLines tune FsyncBatch: fsync at most SyncInterval
	// after the first unsynced line, or once SyncLines lines wait. Zero means
	// DefaultSyncInterval and DefaultSyncLines.
	SyncInterval time.Duration
	SyncLines    int
	// RetryFailed makes the ids of the old errors file pending again: they are
	// dropped from it on Open and retried. Without it they stay in the errors
	// file and Failed reports them, so the runner skips them.
	RetryFailed bool
	// Input identifies the input file (see Fingerprint). The zero value (e.g.
	// for stdin) skips the input check.
	Input InputInfo
	// Settings are the settings that change answers (provider, model,
	// temperature, ...). Record each with an explicit value, defaults
	// included: they are compared over the union of keys. Nil skips the check.
	Settings map[string]string
	// Force resumes although the input or settings differ from those recorded;
	// the new ones are recorded.
	Force bool
	// Now is the clock for the state file's timestamps; nil means time.Now.
	Now func() time.Time
	// Warn receives warnings (a torn tail dropped, duplicate ids found, a
	// forced resume); nil drops them.
	Warn func(msg string)

	// wrap lets tests put a fault-injecting file under the appenders.
	wrap func(*os.File) file
}

// file is what the Store needs of an append-only file; *os.File is one.
type file interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// appendFile is the output or the errors file, open for appending.
type appendFile struct {
	f     file
	path  string
	off   int64 // length up to the last complete line
	dirty bool  // written since its last fsync
}

// Store is an open checkpoint. Done, Failed, Counts and State may be called
// from any goroutine; AppendResult and AppendError are meant for one writer
// goroutine but are serialized anyway; Flush, SetState and Close may be called
// from another goroutine at any time.
//
// Durability: every append is one write(2) of the whole line, so a line is in
// the kernel (safe from a process crash) when AppendResult returns. Fsync is
// group-committed per Options.Fsync: with FsyncBatch an append fsyncs inline
// once SyncLines lines are waiting, and otherwise arms a timer (time.AfterFunc)
// that fsyncs SyncInterval after the first waiting line. Close and Flush fsync
// whatever waits.
type Store struct {
	opts      Options
	lock      *fileLock
	statePath string
	retried   int

	// ioMu guards the files and everything below it up to setMu. Lock order:
	// ioMu, then setMu.
	ioMu    sync.Mutex
	out     appendFile
	errs    appendFile
	waiting int         // lines written since the last fsync
	timer   *time.Timer // FsyncBatch's interval timer
	armed   bool
	broken  *WriteError // sticky: a failed fsync or an un-rolled-back write
	closed  bool
	buf     []byte

	setMu  sync.RWMutex
	done   map[string]struct{}
	failed map[string]struct{}

	stMu     sync.Mutex
	sc       sidecar
	stClosed bool
}

// Open locks, checks, scans and repairs the checkpoint at o.Output, rewrites
// o.Errors, and returns a Store ready for appending. Errors: *LockedError,
// *MismatchError, *CorruptError, or an I/O error; on error nothing is held.
func Open(o Options) (*Store, error) {
	if o.Output == "" || o.Errors == "" {
		return nil, errors.New("checkpoint: Open needs both an output and an errors path")
	}
	if filepath.Clean(o.Output) == filepath.Clean(o.Errors) {
		return nil, fmt.Errorf("checkpoint: output and errors file are the same: %s", o.Output)
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.SyncLines <= 0 {
		o.SyncLines = DefaultSyncLines
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Settings != nil { // as the state file records them
		o.Settings = maps.Clone(o.Settings)
		for k, v := range o.Settings {
			o.Settings[k] = withoutUserinfo(v)
		}
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.wrap == nil {
		o.wrap = func(f *os.File) file { return f }
	}
	lock, err := acquireLock(o.Output)
	if err != nil {
		return nil, err
	}
	s := &Store{opts: o, lock: lock, statePath: statePath(o.Output), failed: map[string]struct{}{}}
	if err := s.open(); err != nil {
		if s.out.f != nil {
			s.out.f.Close()
		}
		if s.errs.f != nil {
			s.errs.f.Close()
		}
		lock.release()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	o := &s.opts
	sc, found, err := readSidecar(s.statePath)
	if err != nil {
		return err
	}
	if found {
		diffs := append(inputDiffs(sc.Input, o.Input), settingsDiffs(sc.Settings, o.Settings)...)
		if len(diffs) > 0 && !o.Force {
			return &MismatchError{Output: o.Output, State: s.statePath, Diffs: diffs}
		}
		for _, d := range diffs {
			o.Warn(fmt.Sprintf("checkpoint: %s: resuming despite a change (forced): %s", o.Output, d))
		}
	} else {
		sc = sidecar{Created: o.Now().UTC()}
	}
	sc.Version, sc.Output, sc.Errors = sidecarVersion, o.Output, o.Errors
	if o.Input != (InputInfo{}) {
		in := o.Input
		sc.Input = &in
	}
	if o.Settings != nil {
		sc.Settings = maps.Clone(o.Settings)
	}

	if err := s.openOutput(); err != nil {
		return err
	}
	if err := s.openErrors(); err != nil {
		return err
	}

	sc.Updated = o.Now().UTC()
	if err := sc.write(s.statePath); err != nil {
		return err
	}
	s.sc = sc
	if o.Fsync == FsyncBatch {
		s.timer = time.AfterFunc(time.Hour, s.tick)
		s.timer.Stop()
	}
	return nil
}

// openOutput scans the output, learning the done ids, repairs a torn tail and
// leaves the file open for appending.
func (s *Store) openOutput() error {
	path := s.opts.Output
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return fmt.Errorf("checkpoint: open output: %w", err)
	}
	s.out = appendFile{f: f, path: path}
	if errors.Is(statErr, os.ErrNotExist) {
		s.done = map[string]struct{}{}
		if err := syncDir(filepath.Dir(path)); err != nil {
			return err
		}
	} else {
		size := int64(0)
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		var (
			dups []string
			bad  *CorruptError
		)
		res, err := scan(f, scanOpts{path: path, needID: true}, func(l *scanLine) error {
			if l.Bad != "" {
				bad = corrupt(bad, l, path, s.opts.Output)
				return nil
			}
			if s.done == nil {
				s.done = make(map[string]struct{}, size/int64(len(l.Line)+1)+16)
			}
			n := len(s.done)
			s.done[string(l.ID)] = struct{}{} // one hash probe, not a lookup and an insert
			if len(s.done) == n {
				dups = append(dups, fmt.Sprintf("%q (line %d)", l.ID, l.No))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if bad != nil {
			return bad
		}
		if s.done == nil {
			s.done = map[string]struct{}{}
		}
		if len(dups) > 0 {
			if len(dups) > 5 {
				dups = append(dups[:5], "…")
			}
			s.opts.Warn(fmt.Sprintf("checkpoint: %s holds %d ids more than once (made outside llmrun?); each counts once: %s",
				path, len(dups), strings.Join(dups, ", ")))
		}
		if res.Good < res.Size {
			if err := truncateDurably(f, res.Good); err != nil {
				return fmt.Errorf("checkpoint: repair %s: %w", path, err)
			}
			s.opts.Warn(fmt.Sprintf("checkpoint: %s: dropped %d bytes of a torn last line (line %d); that request will be redone",
				path, res.Size-res.Good, res.TornLine))
		}
		s.out.off = res.Good
	}
	s.out.f = s.opts.wrap(f)
	return nil
}

// openErrors reads the old errors file, rewrites it to hold only failures
// that stay failed, and leaves it open for appending.
func (s *Store) openErrors() error {
	path := s.opts.Errors
	var (
		kept  [][]byte           // old lines to keep; nil: superseded by a later line of the same id
		index = map[string]int{} // id → its line in kept
		total int
		res   scanResult
	)
	old, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("checkpoint: open errors file: %w", err)
	default:
		var bad *CorruptError
		res, err = scan(old, scanOpts{path: path}, func(l *scanLine) error {
			if l.Bad != "" {
				bad = corrupt(bad, l, path, s.opts.Output)
				return nil
			}
			total++
			id := l.ID
			if id == nil {
				return nil // a failure without an id: the runner meets it again
			}
			if _, done := s.done[string(id)]; done {
				return nil
			}
			if i, ok := index[string(id)]; ok {
				kept[i] = nil
			}
			index[string(id)] = len(kept)
			kept = append(kept, bytes.Clone(l.Line))
			return nil
		})
		old.Close()
		if err != nil {
			return err
		}
		if bad != nil {
			return bad
		}
	}
	if res.Good < res.Size {
		s.opts.Warn(fmt.Sprintf("checkpoint: %s: dropped %d bytes of a torn last line (line %d)", path, res.Size-res.Good, res.TornLine))
	}
	if s.opts.RetryFailed {
		s.retried = len(index)
		clear(index)
		kept = nil
	}
	if len(index) != total || res.Good < res.Size {
		var b []byte
		for _, l := range kept {
			if l != nil {
				b = append(append(b, l...), '\n')
			}
		}
		if err := writeFileAtomic(path, b, filePerm, true); err != nil {
			return err
		}
	}
	for id := range index {
		s.failed[id] = struct{}{}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return fmt.Errorf("checkpoint: open errors file: %w", err)
	}
	s.errs = appendFile{f: f, path: path}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("checkpoint: open errors file: %w", err)
	}
	s.errs.off = fi.Size()
	s.errs.f = s.opts.wrap(f)
	return nil
}

// Done reports whether id already has a result: the runner skips it.
func (s *Store) Done(id string) bool {
	s.setMu.RLock()
	_, ok := s.done[id]
	s.setMu.RUnlock()
	return ok
}

// Failed reports whether id is recorded as failed and not to be retried: an
// old failure kept because RetryFailed is off, or a failure of this run. The
// runner skips it and counts it as failed.
func (s *Store) Failed(id string) bool {
	s.setMu.RLock()
	_, ok := s.failed[id]
	s.setMu.RUnlock()
	return ok
}

// Counts returns how many ids are done and how many are failed (and not done).
func (s *Store) Counts() (done, failed int) {
	s.setMu.RLock()
	defer s.setMu.RUnlock()
	return len(s.done), len(s.failed)
}

// Retried returns how many ids of the old errors file (not done) Open made
// pending again because of RetryFailed.
func (s *Store) Retried() int { return s.retried }

// AppendResult appends line (one JSON object, without '\n', whose top-level
// "custom_id" is id) to the output and marks id done. It returns a wrapped
// ErrAlreadyDone if id is done, a wrapped ErrBadLine if line does not fit, and
// a *WriteError if the write or a due fsync fails.
func (s *Store) AppendResult(id string, line []byte) error {
	if err := validLine(id, line, true); err != nil {
		return err
	}
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if s.Done(id) {
		return fmt.Errorf("%w: %q", ErrAlreadyDone, id)
	}
	werr := s.appendLocked(&s.out, line)
	if werr != nil && werr.Op == "write" {
		return werr
	}
	// The line is in the file; a failed fsync does not take it back.
	s.setMu.Lock()
	s.done[id] = struct{}{}
	delete(s.failed, id)
	s.setMu.Unlock()
	return asError(werr)
}

// AppendError appends line (one JSON object, without '\n') to the errors file
// and records id as failed. id may be "" for a failure that has no custom_id
// (an unparsable input line); otherwise the line's "custom_id" must be id.
// Errors are as for AppendResult.
func (s *Store) AppendError(id string, line []byte) error {
	if err := validLine(id, line, id != ""); err != nil {
		return err
	}
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if id != "" && s.Done(id) {
		return fmt.Errorf("%w: %q", ErrAlreadyDone, id)
	}
	werr := s.appendLocked(&s.errs, line)
	if werr != nil && werr.Op == "write" {
		return werr
	}
	if id != "" {
		s.setMu.Lock()
		s.failed[id] = struct{}{}
		s.setMu.Unlock()
	}
	return asError(werr)
}

// asError returns e as an error, nil if e is nil.
func asError(e *WriteError) error {
	if e == nil {
		return nil
	}
	return e
}

func validLine(id string, line []byte, checkID bool) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("%w: %q: the line contains a newline", ErrBadLine, id)
	}
	if !isObject(line) || !validJSON(line) {
		return fmt.Errorf("%w: %q: not a JSON object", ErrBadLine, id)
	}
	if checkID {
		if got, ok := lineID(line); !ok || string(got) != id {
			return fmt.Errorf("%w: appended as %q but its custom_id is %q", ErrBadLine, id, got)
		}
	}
	return nil
}

// appendLocked writes line and '\n' with one write call, rolls a failed write
// back, and fsyncs if due. Op "write" in the result means the line is not in
// the file; op "fsync" means it is. Requires s.ioMu.
func (s *Store) appendLocked(a *appendFile, line []byte) *WriteError {
	s.buf = append(seal(s.buf[:0], line), '\n')
	n, err := a.f.Write(s.buf)
	if err == nil && n < len(s.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		werr := &WriteError{Path: a.path, Op: "write", Err: err, RolledBack: true}
		if n > 0 {
			if terr := a.f.Truncate(a.off); terr != nil {
				werr.RolledBack = false
				s.broken = werr
			}
		}
		return werr
	}
	a.off += int64(n)
	a.dirty = true
	s.waiting++
	switch s.opts.Fsync {
	case FsyncAlways:
		return s.syncLocked()
	case FsyncBatch:
		if s.waiting >= s.opts.SyncLines {
			return s.syncLocked()
		}
		if !s.armed {
			s.armed = true
			s.timer.Reset(s.opts.SyncInterval)
		}
	}
	return nil
}

// syncLocked fsyncs the files written since their last fsync. A failure is
// sticky. Requires s.ioMu.
func (s *Store) syncLocked() *WriteError {
	for _, a := range []*appendFile{&s.out, &s.errs} {
		if !a.dirty {
			continue
		}
		if err := a.f.Sync(); err != nil {
			s.broken = &WriteError{Path: a.path, Op: "fsync", Err: err}
			return s.broken
		}
		a.dirty = false
	}
	s.waiting = 0
	if s.armed {
		s.timer.Stop()
		s.armed = false
	}
	return nil
}

// tick is FsyncBatch's timer: fsync what waits. A failure is kept for the
// next call to report.
func (s *Store) tick() {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.armed = false
	if s.closed || s.broken != nil {
		return
	}
	s.syncLocked()
}

func (s *Store) usableLocked() error {
	if s.closed {
		return ErrClosed
	}
	return asError(s.broken)
}

// Flush fsyncs whatever was appended since the last fsync (a no-op with
// FsyncNever). Call it when draining on a signal; Close does it too.
func (s *Store) Flush() error {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if s.opts.Fsync == FsyncNever {
		return nil
	}
	return asError(s.syncLocked())
}

// SetState records value under key in the sidecar state file and writes it
// durably (temp file, fsync, rename, directory fsync) before returning. A nil
// value deletes the key. Use it for what a rerun must know, such as the ids
// of open provider batches, recorded before polling them.
func (s *Store) SetState(key string, value json.RawMessage) error {
	if value != nil && !json.Valid(value) {
		return fmt.Errorf("checkpoint: SetState(%q): value is not valid JSON", key)
	}
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if s.stClosed {
		return ErrClosed
	}
	sc := s.sc
	sc.State = maps.Clone(s.sc.State)
	if value == nil {
		delete(sc.State, key)
	} else {
		if sc.State == nil {
			sc.State = map[string]json.RawMessage{}
		}
		sc.State[key] = compact(value)
	}
	sc.Updated = s.opts.Now().UTC()
	if err := sc.write(s.statePath); err != nil {
		return err
	}
	s.sc = sc
	return nil
}

// Output returns the output file's path as given to Open.
func (s *Store) Output() string { return s.opts.Output }

// State returns the value recorded under key, by this run or an earlier one,
// in compact form.
func (s *Store) State(key string) (json.RawMessage, bool) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	v, ok := s.sc.State[key]
	return bytes.Clone(v), ok
}

// StateKeys returns the recorded state keys, sorted.
func (s *Store) StateKeys() []string {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	return slices.Sorted(maps.Keys(s.sc.State))
}

// Close fsyncs what waits (unless FsyncNever), closes the files, writes the
// state file and releases the lock. It returns the first sticky write error
// too, if there was one. Calling it again returns nil.
func (s *Store) Close() error {
	s.ioMu.Lock()
	if s.closed {
		s.ioMu.Unlock()
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	var errs []error
	if s.broken != nil {
		errs = append(errs, s.broken)
	} else if s.opts.Fsync != FsyncNever {
		errs = append(errs, asError(s.syncLocked()))
	}
	errs = append(errs, s.out.f.Close(), s.errs.f.Close())
	s.ioMu.Unlock()

	s.stMu.Lock()
	s.stClosed = true
	s.sc.Updated = s.opts.Now().UTC()
	errs = append(errs, s.sc.write(s.statePath))
	s.stMu.Unlock()

	errs = append(errs, s.lock.release())
	return errors.Join(errs...)
}

// corrupt records a malformed line: the first one makes the error, later ones
// are counted.
func corrupt(e *CorruptError, l *scanLine, path, output string) *CorruptError {
	if e == nil {
		return &CorruptError{Path: path, Output: output, Line: l.No, Offset: l.Off, Reason: l.Bad, Count: 1}
	}
	e.Count++
	return e
}

// truncateDurably cuts f to size and fsyncs it.
func truncateDurably(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}
