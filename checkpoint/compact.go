package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// compact rewrites the output and the errors file without their superseded
// lines (see Store), once the run's appends are over. Each rewrite is a temp
// file, fsync and rename: a kill leaves the old file (a rerun reads its later
// lines as current and compacts at its end) or the new one. With
// Options.Tally, the dropped lines' sum is recorded in the state file as
// pending before the rename and as Dropped after it, so that it is counted
// exactly once whenever the kill comes (see droppedPending).
func (s *Store) compact() error {
	s.setMu.RLock()
	// Deferred answers SkipAll did not take as met are all unmet: pruning
	// them needs them indexed. (Nothing else here is about them: a deferred
	// answer is never stale, and adopting one indexed them.)
	prunable := s.opts.Prune && s.inputDone && s.x.deferred > 0 && !s.x.deferSeen
	s.setMu.RUnlock()
	if prunable {
		s.undeferred()
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	x := &s.x
	prune := s.opts.Prune && s.inputDone && x.done.unseen() > 0
	if x.outStale > 0 || prune || s.adopted > 0 {
		kept, err := s.rewrite(s.opts.Output, true, false, func(l *scanLine) bool {
			return s.keepAnswer(l, prune)
		})
		if err != nil {
			return err
		}
		if prune {
			s.opts.Warn(fmt.Sprintf("checkpoint: %s: dropped the answers of %d ids no longer in the input (--prune)", s.opts.Output, x.done.n-kept))
		}
		x.outStale, s.adopted = 0, 0
	}
	if s.errs.f != nil && s.errs.off == 0 { // an empty errors file, as older runs left them
		if err := os.Remove(s.opts.Errors); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checkpoint: compact: %w", err)
		}
		return nil
	}
	gone := s.inputDone && x.failed.unseen() > 0
	if s.errs.f != nil && (x.errStale || gone) {
		atOpen := s.errsAtOpen
		if _, err := s.rewrite(s.opts.Errors, false, true, func(l *scanLine) bool {
			if l.ID == nil {
				return l.Off >= atOpen // a failure of this run without an id stays
			}
			keep := false
			x.failed.each(l.Key, func(i int) bool {
				if x.failed.offAt(i) != l.Off {
					return true
				}
				keep = !s.inputDone || x.failed.seen(i)
				return false
			})
			return keep
		}); err != nil {
			return err
		}
		x.errStale = false
	}
	return nil
}

// keepAnswer says whether compaction keeps output line l: the latest line
// of its id (with prune, of an id met in the input), or a line that answers
// nothing and whose id no answer has superseded. Requires s.setMu.
func (s *Store) keepAnswer(l *scanLine, prune bool) bool {
	x := &s.x
	latest, keep := false, false
	x.done.each(l.Key, func(i int) bool {
		if x.done.offAt(i) != l.Off {
			return true
		}
		latest, keep = true, !prune || x.done.seen(i)
		return false
	})
	switch {
	case latest:
		return keep
	case Answered(l.Line):
		return false // a later line of its id answers it again
	}
	i, _ := x.findDone(l.Key, string(l.ID))
	return i < 0
}

// rewrite replaces path with the lines keep accepts, and returns how many it
// kept. The file was validated when the Store opened it and only the Store
// appended since, so lines are not validated again. With removeEmpty a file
// left without lines is removed. The dropped lines' tally is recorded as
// pending while the new file is durable but not yet in place.
func (s *Store) rewrite(path string, needID, removeEmpty bool, keep func(l *scanLine) bool) (int, error) {
	in, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: compact: %w", err)
	}
	defer in.Close()
	rw, err := startRewrite(in, path, "compact")
	if err != nil {
		return 0, err
	}
	defer rw.abort()
	kept, size, dropped, err := s.copyKept(in, path, needID, rw.w, keep)
	if err == nil {
		err = rw.w.Flush()
	}
	if err != nil {
		return 0, rw.errorf(err)
	}
	remove := kept == 0 && removeEmpty
	if !remove {
		if err := rw.sync(); err != nil {
			return 0, err
		}
	}
	if dropped != 0 {
		if err := s.setDropped(&droppedPending{File: path, Sum: dropped, Size: size}); err != nil {
			return 0, err
		}
	}
	if remove {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("checkpoint: compact: %w", err)
		}
	} else if err := rw.replace(); err != nil {
		return 0, err
	}
	if err := s.opts.dirSync(rw.dir); err != nil {
		return 0, err
	}
	if dropped != 0 {
		if err := s.setDropped(nil); err != nil {
			return 0, err
		}
	}
	return kept, nil
}

// copyKept copies the lines of in that keep accepts to w. It returns how
// many it kept and their size, and the Options.Tally of those it dropped.
func (s *Store) copyKept(in io.Reader, path string, needID bool, w *bufio.Writer, keep func(l *scanLine) bool) (kept int, size int64, dropped float64, err error) {
	_, err = scan(in, scanOpts{path: path, needID: needID, keys: true, trusted: true}, func(l *scanLine) error {
		if !keep(l) {
			if s.opts.Tally != nil {
				dropped += s.opts.Tally(l.Line)
			}
			return nil
		}
		line := l.Line
		if needID && s.adopted > 0 {
			line = s.adoptedLine(l)
		}
		kept++
		size += int64(len(line)) + 1
		w.Write(line)
		return w.WriteByte('\n')
	})
	return kept, size, dropped, err
}

// setDropped records a compaction under way (p), or settles the one
// recorded (nil), in the state file.
func (s *Store) setDropped(p *droppedPending) error {
	lines := s.appended()
	s.stMu.Lock()
	defer s.stMu.Unlock()
	sc := s.sc
	if p == nil {
		sc.settle()
	} else {
		sc.DroppedPending = p
	}
	return s.writeStateLocked(sc, lines)
}

// removeTemps removes the temp files a rewrite of path leaves when it is
// killed. Only the lock holder writes them, and the caller holds the lock.
func removeTemps(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	prefix := "." + base + ".tmp"
	matches, _ := filepath.Glob(filepath.Join(dir, escapeGlob(prefix)+"*"))
	for _, m := range matches {
		// os.CreateTemp's suffix is digits; another output named like ours
		// plus ".tmp…" has temp files that do not end so.
		if rest := strings.TrimPrefix(filepath.Base(m), prefix); rest != "" && strings.Trim(rest, "0123456789") == "" {
			os.Remove(m)
		}
	}
}

// escapeGlob quotes the pattern characters of s.
func escapeGlob(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
