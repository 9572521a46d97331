package checkpoint

import (
	"bytes"
	"cmp"
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
	"sync/atomic"
	"time"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/internal/outfile"
)

// Group-commit defaults for FsyncBatch.
const (
	DefaultSyncInterval = 50 * time.Millisecond
	DefaultSyncLines    = 1024
)

// ErrorsPath is the default errors file of an output, beside it:
// "x.out.jsonl" → "x.errors.jsonl", "x.jsonl" → "x.errors.jsonl",
// anything else → "<output>.errors.jsonl". Two outputs never share one.
func ErrorsPath(output string) string {
	switch {
	case strings.HasSuffix(output, ".out.jsonl"):
		return strings.TrimSuffix(output, ".out.jsonl") + ".errors.jsonl"
	case strings.HasSuffix(output, ".jsonl"):
		return strings.TrimSuffix(output, ".jsonl") + ".errors.jsonl"
	}
	return output + ".errors.jsonl"
}

// Options configures Open. Output is required.
type Options struct {
	// Output is the results file, one JSON line per answered request. It is
	// the checkpoint: its lines say which requests are answered.
	Output string
	// Errors is the errors file, one JSON line per failed request; "" means
	// ErrorsPath(Output). It is locked with the output and created only when
	// something fails.
	Errors string
	// Fsync is the durability mode; the zero value is FsyncBatch.
	Fsync FsyncMode
	// SyncInterval and SyncLines tune FsyncBatch: fsync at most SyncInterval
	// after the first unsynced line, or once SyncLines lines wait. Zero means
	// DefaultSyncInterval and DefaultSyncLines.
	SyncInterval time.Duration
	SyncLines    int
	// RetryFailed makes Classify send again a request that failed before
	// (its record stays in the errors file until it succeeds). Without it
	// Classify says KeepFailed, and the runner counts it as failed.
	RetryFailed bool
	// Prune drops, when the run has classified its whole input (InputDone),
	// the output lines of ids no longer in it. Without it they are kept.
	Prune bool
	// Input is the input's path, recorded in the state file for status.
	Input string
	// Expect, if it can read its ids again (InputSet.WithIDs), is the
	// run's checked input: Open's read of the output then also confirms
	// whether the output answers exactly its ids, so that SkipAll need not
	// read the output again.
	Expect InputSet
	// Settings are recorded in the state file for the user's information;
	// URL credentials are removed first. They are not compared: requests are,
	// by fingerprint.
	Settings map[string]string
	// Tally, if set, gives the number a line carries that must survive the
	// line (its cost, say): the Store sums it over the lines its compactions
	// drop and keeps the sum in the state file (Dropped), counted exactly
	// once whenever a kill comes. The lines' total plus Dropped is then the
	// total over every line ever written.
	Tally func(line []byte) float64
	// Now is the clock for the state file's timestamps; nil means time.Now.
	Now func() time.Time
	// Warn receives warnings (a torn tail dropped, repeated answers); nil
	// drops them.
	Warn func(msg string)

	// wrap lets tests put a fault-injecting file under the appenders.
	wrap func(*os.File) file
	// dirSync, if set, replaces syncDir for the Store's directory fsyncs
	// (tests count them).
	dirSync func(dir string) error
	// mergeCap, if positive, replaces mergeCap (tests).
	mergeCap int
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
	f     file // nil: the errors file before anything failed
	path  string
	off   int64  // length up to the last complete line
	lines uint32 // number of the last complete line
	dirty bool   // written since its last fsync
}

// Verdict is what a run does with one request of its input.
type Verdict uint8

const (
	// Send: the output does not answer this request; send it.
	Send Verdict = iota
	// Skip: the output answers this very request (same fingerprint).
	Skip
	// KeepFailed: it failed before and Options.RetryFailed is off; count
	// it as failed.
	KeepFailed
)

func (v Verdict) String() string {
	switch v {
	case Send:
		return "send"
	case Skip:
		return "skip"
	case KeepFailed:
		return "keep-failed"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Store is an open checkpoint. Classify, Done, Failed, Counts and State may
// be called from any goroutine; Answer and Fail (and AppendResult and
// AppendError) are meant for one writer goroutine but are serialized anyway;
// Flush, SetState and Close may be called from another goroutine at any
// time.
//
// Memory: the Store keeps, per id, 24 bits of a hash of it and the offset
// of its latest line in one 8-byte slot (9.4 to 19 bytes an id), never the
// id strings or lines: a lookup confirms a match by reading the line (see
// index and lineReader). A first run that promises distinct ids keeps
// nothing per id (see Distinct), nor does a rerun whose output answers
// exactly its input (see deferred.go).
//
// Durability: every append is one write(2) of the whole line, so a line is in
// the kernel (safe from a process crash) when Answer returns. Fsync is
// group-committed per Options.Fsync: with FsyncBatch an append fsyncs inline
// once SyncLines lines are waiting, and otherwise arms a timer (time.AfterFunc)
// that fsyncs SyncInterval after the first waiting line. Close and Flush fsync
// whatever waits.
//
// Superseded lines (an answer to an older version of a request, failure
// records of requests since answered) stay in the files until Close, which
// rewrites a file that has any (temp file, fsync, rename). A kill at any
// moment leaves either file whole, old or new; the next Open reads the later
// line of an id as the current one, so the rerun reaches the same state.
type Store struct {
	opts      Options
	given     string // the output's path as given to Open; opts has it resolved
	locks     []*fileLock
	statePath string

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

	setMu      sync.RWMutex
	x          loaded
	lazy       atomic.Bool // x holds deferred answers (see deferred.go)
	errsAtOpen int64       // size of the errors file when it was opened
	inputDone  bool
	retried    int
	adopted    int // answers re-fingerprinted by ClassifyAdopting, rewritten at Close

	stMu     sync.Mutex
	sc       sidecar
	stClosed bool
	// stLines is appended() when the state file was last written: Close
	// rewrites it (for Updated) only if lines came since.
	stLines uint64
}

// Open locks, scans and repairs the checkpoint at o.Output and its errors
// file, and returns a Store ready for appending. Errors: *LockedError,
// *CorruptError, *StateError, or an I/O error; on error nothing is held.
func Open(o Options) (*Store, error) {
	if o.Output == "" {
		return nil, errors.New("checkpoint: Open needs an output path")
	}
	if o.Errors == "" {
		o.Errors = ErrorsPath(o.Output)
	}
	if outfile.Same(o.Output, o.Errors) {
		return nil, fmt.Errorf("checkpoint: output and errors file are the same: %s", o.Output)
	}
	for _, p := range []string{o.Output, o.Errors} {
		if err := outfile.RequireRegular(p); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	// Every name of a file is one checkpoint: the lock, the state file and
	// the rewrites go by the path the name resolves to, so a symlink alias
	// of a live run's output finds it locked, and a compaction replaces
	// the link's target, never the link.
	given := o.Output
	o.Output, o.Errors = outfile.MustResolve(o.Output), outfile.MustResolve(o.Errors)
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.SyncLines <= 0 {
		o.SyncLines = DefaultSyncLines
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.wrap == nil {
		o.wrap = func(f *os.File) file { return f }
	}
	if o.dirSync == nil {
		o.dirSync = syncDir
	}
	s := &Store{opts: o, given: given, statePath: statePath(o.Output)}
	s.x.output, s.x.errors = o.Output, o.Errors
	if err := s.open(); err != nil {
		for _, a := range []*appendFile{&s.out, &s.errs} {
			if a.f != nil {
				a.f.Close()
			}
		}
		s.x.outR.close()
		s.x.errR.close()
		s.unlock()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	o := &s.opts
	// The output's lock covers its errors file and state file; the errors
	// file has its own too, as --errors may name one another output uses.
	for _, p := range []string{o.Output, o.Errors} {
		l, err := acquireLock(p)
		if err != nil {
			return err
		}
		s.locks = append(s.locks, l)
	}
	for _, p := range []string{o.Output, o.Errors, s.statePath} {
		removeTemps(p) // left by a kill during a rewrite
	}
	sc, found, err := readSidecar(s.statePath)
	if err != nil {
		return err
	}
	if !found {
		sc = sidecar{Created: o.Now().UTC()}
	}
	sc.settle() // a compaction killed between its two state writes
	sc.Version, sc.Output, sc.Errors = sidecarVersion, o.Output, o.Errors
	if o.Input != "" {
		sc.Input = &sidecarInput{Path: o.Input}
	}
	if o.Settings != nil {
		sc.Settings = maps.Clone(o.Settings)
	}

	created, err := s.openOutput()
	if err != nil {
		return err
	}
	if err := s.openErrors(); err != nil {
		return err
	}
	for _, w := range []string{s.x.dupWarning(), s.x.foreignWarning()} {
		if w != "" {
			o.Warn(w)
		}
	}

	s.lazy.Store(s.x.deferred > 0)

	sc.Updated = o.Now().UTC()
	if err := sc.write(s.statePath, o.dirSync); err != nil {
		return err
	}
	// A new output's name must be durable before anything is appended to
	// it. The state file's write just fsynced its own directory, which is
	// the output's unless the state file is a symlink to another.
	if dir := filepath.Dir(o.Output); created && filepath.Dir(outfile.MustResolve(s.statePath)) != dir {
		if err := o.dirSync(dir); err != nil {
			return err
		}
	}
	s.sc, s.stLines = sc, s.appended()
	if o.Fsync == FsyncBatch {
		s.timer = time.AfterFunc(time.Hour, s.tick)
		s.timer.Stop()
	}
	return nil
}

// openOutput loads the output, repairs a torn tail and leaves the file open
// for appending. It says whether it created the file (open makes the new
// name durable).
func (s *Store) openOutput() (created bool, err error) {
	path := s.opts.Output
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return false, fmt.Errorf("checkpoint: open output: %w", err)
	}
	s.out = appendFile{f: f, path: path}
	if s.x.outR, err = openLineReader(path); err != nil {
		return false, fmt.Errorf("checkpoint: open output: %w", err)
	}
	created = errors.Is(statErr, os.ErrNotExist)
	if !created {
		if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
			s.x.merge = startMerge(s.opts.Expect, cmp.Or(s.opts.mergeCap, mergeCap))
		}
		err := s.load(f, s.x.loadOutput)
		if err == nil {
			s.x.merge.finish()
		}
		s.x.merge.abandon()
		if err == nil && !s.x.canDefer(s.opts.Expect) {
			err = s.x.undefer(s.x.outRes.Good) // the run has lookups to make
		}
		if err != nil {
			return false, err
		}
		if err := s.appendAfter(&s.out, f, s.x.outRes, "; that request will be redone"); err != nil {
			return false, err
		}
	}
	s.out.f = s.opts.wrap(f)
	return created, nil
}

// openErrors loads the errors file, if there is one, repairs a torn tail and
// leaves it open for appending.
func (s *Store) openErrors() error {
	path := s.opts.Errors
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		s.errs = appendFile{path: path}
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: open errors file: %w", err)
	}
	s.errs = appendFile{f: f, path: path}
	if s.x.errR, err = openLineReader(path); err != nil {
		return fmt.Errorf("checkpoint: open errors file: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		// Its records are looked up among the answers.
		if err := s.x.undefer(s.x.outRes.Good); err != nil {
			return err
		}
	}
	if err := s.load(f, s.x.loadErrors); err != nil {
		return err
	}
	if err := s.appendAfter(&s.errs, f, s.x.errRes, ""); err != nil {
		return err
	}
	s.errsAtOpen = s.errs.off
	s.errs.f = s.opts.wrap(f)
	return nil
}

// appendAfter positions a after the well-formed lines res found in f:
// a torn last line (a crash mid-append) is cut off durably, with a warning
// saying what it costs (then), so appends continue from a clean line end.
func (s *Store) appendAfter(a *appendFile, f *os.File, res scanResult, then string) error {
	if res.Good < res.Size {
		if err := truncateDurably(f, res.Good); err != nil {
			return fmt.Errorf("checkpoint: repair %s: %w", a.path, err)
		}
		s.opts.Warn(fmt.Sprintf("checkpoint: %s: dropped %d bytes of a torn last line (line %d)%s", a.path, res.Size-res.Good, res.TornLine, then))
	}
	a.off, a.lines = res.Good, uint32(res.Newlines)
	return nil
}

// load runs one of loaded's readers over f; a malformed line is the error.
func (s *Store) load(f *os.File, read func(io.Reader, int64) error) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("checkpoint: open: %w", err)
	}
	if err := read(f, fi.Size()); err != nil {
		return err
	}
	if s.x.malformed != nil {
		return s.x.malformed
	}
	return nil
}

// Classify says what the run does with the request id whose fingerprint is
// fp (0: unknown, which matches any), and records that id is in the current
// input (see InputDone). An answer in the output to the same request makes
// it Skip and drops a failure record of it; a failure of the same request
// makes it KeepFailed unless Options.RetryFailed; anything else is Send: a
// new id, or one whose request changed since it was answered or failed.
func (s *Store) Classify(id string, fp Fingerprint) Verdict {
	s.undeferred()
	k := keyOfString(id)
	s.setMu.Lock()
	defer s.setMu.Unlock()
	i, have := s.x.findDone(k, id)
	return s.classifyLocked(k, id, fp, i, have)
}

// classifyLocked is Classify for the id whose key is k, whose answer is at
// slot i (-1: none) for request have. Requires s.setMu.
func (s *Store) classifyLocked(k idKey, id string, fp Fingerprint, i int, have Fingerprint) Verdict {
	x := &s.x
	if i >= 0 {
		x.done.markSeen(i)
		if sameRequest(have, fp) {
			if j, _ := x.findFailed(k, id); j >= 0 {
				x.delFailed(j)
				x.errStale = true
			}
			return Skip
		}
	}
	if j, failed := x.findFailed(k, id); j >= 0 {
		x.failed.markSeen(j)
		if !s.opts.RetryFailed && sameRequest(failed, fp) {
			return KeepFailed
		}
		if s.opts.RetryFailed {
			s.retried++
		}
	}
	return Send
}

// InputDone records that Classify has been called for every request of the
// current input, so that an id it did not meet has left the input: Close
// drops its failure records, and with Options.Prune its answers. Call it
// only after a complete pass; an interrupted run drops nothing.
func (s *Store) InputDone() {
	s.setMu.Lock()
	s.inputDone = true
	s.setMu.Unlock()
}

// Reserve makes room for n ids in the output's index, so that a run that
// will answer about n requests does not grow the table on the way (a
// growth holds the old table and the new one, twice as large, at once).
// The table is never shrunk.
func (s *Store) Reserve(n int) {
	s.setMu.Lock()
	if !s.x.distinct && s.x.deferred == 0 {
		s.x.done.reserve(n)
	}
	s.setMu.Unlock()
}

// Done reports whether the output answers id, for whatever request.
func (s *Store) Done(id string) bool {
	s.indexed()
	s.undeferred()
	s.setMu.RLock()
	defer s.setMu.RUnlock()
	i, _ := s.x.findDone(keyOfString(id), id)
	return i >= 0
}

// Failed reports whether id is recorded as failed and not to be retried:
// an earlier failure kept because RetryFailed is off, or a failure of this
// run. Like Done it ignores fingerprints (Classify does not).
func (s *Store) Failed(id string) bool {
	s.setMu.RLock()
	defer s.setMu.RUnlock()
	j, _ := s.x.findFailed(keyOfString(id), id)
	return s.keptFailed(j)
}

// keptFailed reports whether the failure at slot i (-1: none) stands for
// Failed. Requires s.setMu.
func (s *Store) keptFailed(i int) bool {
	return i >= 0 && (!s.opts.RetryFailed || s.x.failed.offAt(i) >= s.errsAtOpen)
}

// Counts returns how many ids the output answers (for whatever request) and
// how many Failed reports.
func (s *Store) Counts() (done, failed int) {
	s.setMu.RLock()
	defer s.setMu.RUnlock()
	done = s.x.done.n + s.x.unindexed + s.x.deferred
	if !s.opts.RetryFailed {
		return done, s.x.failed.n
	}
	for i, w := range s.x.failed.s {
		if w != 0 && s.keptFailed(i) {
			failed++
		}
	}
	return done, failed
}

// Retried returns how many requests Classify sent again although they had
// failed before (Options.RetryFailed).
func (s *Store) Retried() int {
	s.setMu.RLock()
	defer s.setMu.RUnlock()
	return s.retried
}

// Dropped is the sum of Options.Tally over the lines compactions of this
// checkpoint have dropped, by this run or earlier ones.
func (s *Store) Dropped() float64 {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	return s.sc.Dropped
}

// IndexBytes is the memory the Store's per-id tables hold.
func (s *Store) IndexBytes() int {
	s.setMu.RLock()
	defer s.setMu.RUnlock()
	return s.x.done.bytes() + s.x.failed.bytes()
}

// Answer appends line (one JSON object without '\n' whose top-level
// "custom_id" is id and whose last member is an object, the runner's
// "llmrun") to the output, adding fp and the line's checksum to that last
// object; it marks the request answered and drops the id's failure record.
// If the output answers an older request of id, the new line supersedes
// that one. It returns a wrapped ErrAlreadyDone if the output already
// answers this request, a wrapped ErrBadLine if line does not fit, and a
// *WriteError if the write or a due fsync fails.
func (s *Store) Answer(id string, fp Fingerprint, line []byte) error {
	return s.record(id, fp, line, true, true, func(k idKey) error { return s.answerLocked(k, id, fp, line) })
}

// AnswerEncoded is Answer for a line its caller encoded as valid JSON
// (output.Line's encoder, over an answer body already checked): the scan
// of the whole line for valid JSON is skipped, its other checks stand.
func (s *Store) AnswerEncoded(id string, fp Fingerprint, line []byte) error {
	return s.record(id, fp, line, true, false, func(k idKey) error { return s.answerLocked(k, id, fp, line) })
}

// record checks line (its JSON too if scan) and, under the write lock of
// a usable store, refuses request fp of id when the output answers it
// already (if checkID), then writes it with write: Answer's and Fail's
// common part.
func (s *Store) record(id string, fp Fingerprint, line []byte, checkID, scan bool, write func(k idKey) error) error {
	if err := validLine(id, line, checkID, scan, fp); err != nil {
		return err
	}
	s.undeferred()
	k := keyOfString(id)
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if checkID {
		if err := s.notAnswered(k, id, fp); err != nil {
			return err
		}
	}
	return write(k)
}

// answerLocked is Answer's write, under s.ioMu.
func (s *Store) answerLocked(k idKey, id string, fp Fingerprint, line []byte) error {
	off, werr, err := s.appendAt(&s.out, line, fp)
	if err != nil {
		return err
	}
	// The line is in the file; a failed fsync does not take it back.
	s.setMu.Lock()
	x := &s.x
	if i, old := x.findDone(k, id); i >= 0 {
		delete(x.doneFP, x.done.offAt(i))
		x.unanswer(k, old)
		x.done.setOff(i, off)
		x.done.markSeen(i)
		x.outStale++
	} else if x.distinct {
		x.unindexed++ // no lookup can look for it (see Distinct)
	} else {
		x.done.markSeen(x.done.add(k, off))
	}
	x.answer(k, fp)
	if j, _ := x.findFailed(k, id); j >= 0 {
		x.delFailed(j)
		x.errStale = true
	}
	s.setMu.Unlock()
	return asError(werr)
}

// notAnswered is a wrapped ErrAlreadyDone if the output answers request fp
// of id (key k): neither an answer nor a failure is written after one.
func (s *Store) notAnswered(k idKey, id string, fp Fingerprint) error {
	s.setMu.RLock()
	i, have := s.x.findDone(k, id)
	dup := i >= 0 && sameRequest(have, fp)
	s.setMu.RUnlock()
	if dup {
		return fmt.Errorf("%w: %q", ErrAlreadyDone, id)
	}
	return nil
}

// Fail appends line (one JSON object without '\n') to the errors file,
// adding fp and its checksum as Answer does, and records the request as
// failed; an earlier failure record of id is superseded. id may be "" for a
// failure that has no custom_id; otherwise the line's "custom_id" must be
// id. Errors are as for Answer.
func (s *Store) Fail(id string, fp Fingerprint, line []byte) error {
	return s.record(id, fp, line, id != "", true, func(k idKey) error { return s.failLocked(k, id, fp, line) })
}

// failLocked is Fail's write, under s.ioMu.
func (s *Store) failLocked(k idKey, id string, fp Fingerprint, line []byte) error {
	if s.errs.f == nil {
		if err := s.createErrorsLocked(); err != nil {
			return err
		}
	}
	off, werr, err := s.appendAt(&s.errs, line, fp)
	if err != nil {
		return err
	}
	if id != "" {
		s.setMu.Lock()
		x := &s.x
		if j, _ := x.findFailed(k, id); j >= 0 {
			delete(x.failedFP, x.failed.offAt(j))
			x.failed.setOff(j, off)
			x.failed.markSeen(j)
			x.errStale = true
		} else {
			x.failed.markSeen(x.failed.add(k, off))
		}
		s.setMu.Unlock()
	}
	return asError(werr)
}

// createErrorsLocked creates the errors file at the first failure.
func (s *Store) createErrorsLocked() error {
	f, err := os.OpenFile(s.errs.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return &WriteError{Path: s.errs.path, Op: "write", Err: err, RolledBack: true}
	}
	if err := s.opts.dirSync(filepath.Dir(s.errs.path)); err != nil {
		f.Close()
		return &WriteError{Path: s.errs.path, Op: "write", Err: err, RolledBack: true}
	}
	r, err := openLineReader(s.errs.path)
	if err != nil {
		f.Close()
		return &WriteError{Path: s.errs.path, Op: "write", Err: err, RolledBack: true}
	}
	s.setMu.Lock()
	s.x.errR = r
	s.setMu.Unlock()
	s.errs.f = s.opts.wrap(f)
	return nil
}

// AppendResult is Answer without a fingerprint, for callers that do not
// fingerprint their requests: the line then answers id whatever its
// request becomes.
func (s *Store) AppendResult(id string, line []byte) error { return s.Answer(id, 0, line) }

// AppendError is Fail without a fingerprint.
func (s *Store) AppendError(id string, line []byte) error { return s.Fail(id, 0, line) }

// asError returns e as an error, nil if e is nil.
func asError(e *WriteError) error {
	if e == nil {
		return nil
	}
	return e
}

func validLine(id string, line []byte, checkID, scan bool, fp Fingerprint) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("%w: %q: the line contains a newline", ErrBadLine, id)
	}
	if !isObject(line) || scan && !jsonvalid.Valid(line) {
		return fmt.Errorf("%w: %q: not a JSON object", ErrBadLine, id)
	}
	if checkID {
		if got, ok := lineID(line); !ok || string(got) != id {
			return fmt.Errorf("%w: appended as %q but its custom_id is %q", ErrBadLine, id, got)
		}
	}
	if fp != 0 && !sealable(line) {
		return fmt.Errorf("%w: %q: a line with a fingerprint must end with an object member (the llmrun object), compact", ErrBadLine, id)
	}
	return nil
}

// appendAt appends line to a where the index can address it: the line's
// offset and a failed fsync (the line is in the file all the same), or
// the error that kept the line out of the file.
func (s *Store) appendAt(a *appendFile, line []byte, fp Fingerprint) (int64, *WriteError, error) {
	off := a.off
	if off > maxOffset {
		return 0, nil, fmt.Errorf("checkpoint: %s has reached 256 GiB, the most the index addresses", a.path)
	}
	werr := s.appendLocked(a, line, fp)
	if werr != nil && werr.Op == "write" {
		return 0, nil, werr
	}
	return off, werr, nil
}

// appendLocked writes line, sealed with fp, and '\n' with one write call,
// rolls a failed write back, and fsyncs if due. Op "write" in the result
// means the line is not in the file; op "fsync" means it is. Requires
// s.ioMu.
func (s *Store) appendLocked(a *appendFile, line []byte, fp Fingerprint) *WriteError {
	s.buf = append(seal(s.buf[:0], line, fp), '\n')
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
	a.lines++
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
// of open provider batches, recorded before polling them. A value the file
// holds already (the key absent, for nil) is durable as it is: nothing is
// written, so a rerun that changes nothing costs no state write.
func (s *Store) SetState(key string, value json.RawMessage) error {
	if value != nil && !json.Valid(value) {
		return fmt.Errorf("checkpoint: SetState(%q): value is not valid JSON", key)
	}
	if value != nil {
		value = compact(value)
	}
	lines := s.appended() // before stMu: lock order (a line after it only makes Close write)
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if s.stClosed {
		return ErrClosed
	}
	if old, ok := s.sc.State[key]; ok == (value != nil) && bytes.Equal(old, value) {
		return nil // every state change is written before it is recorded
	}
	sc := s.sc
	sc.State = maps.Clone(s.sc.State)
	if value == nil {
		delete(sc.State, key)
	} else {
		if sc.State == nil {
			sc.State = map[string]json.RawMessage{}
		}
		sc.State[key] = value
	}
	return s.writeStateLocked(sc, lines)
}

// writeStateLocked writes sc, stamped now, as the state file and records
// it as written with lines appended (see stLines). Requires s.stMu.
func (s *Store) writeStateLocked(sc sidecar, lines uint64) error {
	sc.Updated = s.opts.Now().UTC()
	if err := sc.write(s.statePath, s.opts.dirSync); err != nil {
		return err
	}
	s.sc, s.stLines = sc, lines
	return nil
}

// appended counts the lines appended to the output and the errors file
// (with those they held at Open): it grows with every append.
func (s *Store) appended() uint64 {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	return s.appendedLocked()
}

func (s *Store) appendedLocked() uint64 { return uint64(s.out.lines) + uint64(s.errs.lines) }

// Output returns the output file's path as given to Open.
func (s *Store) Output() string { return s.given }

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

// Close fsyncs what waits (unless FsyncNever), closes the files, rewrites
// each that holds superseded lines (see Store), writes the state file if
// lines were appended since it was last written (its every change is
// written when made: this write only moves Updated on) and releases the
// locks. It returns the first sticky write error too, if there was one;
// then nothing is rewritten. Calling it again returns nil.
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
	errs = append(errs, s.out.f.Close())
	if s.errs.f != nil {
		errs = append(errs, s.errs.f.Close())
	}
	broken, lines := s.broken != nil, s.appendedLocked()
	s.ioMu.Unlock()

	if err := errors.Join(errs...); err == nil && !broken {
		errs = append(errs, s.compact())
	}
	for _, r := range []*lineReader{s.x.outR, s.x.errR} {
		if r != nil && r.err != nil {
			s.opts.Warn(fmt.Sprintf("checkpoint: reading back %s: %v; the requests it concerned were treated as not done", r.f.Name(), r.err))
		}
		errs = append(errs, r.close())
	}

	s.stMu.Lock()
	s.stClosed = true
	if lines != s.stLines {
		errs = append(errs, s.writeStateLocked(s.sc, lines))
	}
	s.stMu.Unlock()

	errs = append(errs, s.unlock())
	return errors.Join(errs...)
}

func (s *Store) unlock() error {
	var errs []error
	for i := len(s.locks) - 1; i >= 0; i-- {
		errs = append(errs, s.locks[i].release())
	}
	s.locks = nil
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
