package runner

import (
	"sync"
	"sync/atomic"
	"time"
)

// daySaveEvery is how long the daily counts may go unsaved while they
// change: a crash (kill -9, power loss) loses at most this much of the
// day's counts, and a rerun the same day may overrun the day by what was
// sent in it. Each save is one durable state write (temp file, fsync,
// rename, directory fsync): at most one every 2s is at most 1 fsync a
// second beside the output's group commit (up to 20 a second), and 2s of
// a day's requests is a few of the hundreds to thousands a per-day
// budget allows.
const daySaveEvery = 2 * time.Second

// daySaver saves the daily counts during the run, daySaveEvery after
// the first change since the last save (the checkpoint's group commit
// does the same for the output's lines): a run whose counts do not
// change (a rerun with nothing to send, a --wait-daily hold) never
// wakes it, and a run shorter than the interval only saves at its end.
type daySaver struct {
	r     *run
	armed atomic.Bool
	timer *time.Timer
	// mu is held across a save and by stop: a save the timer started
	// finishes before the run's last save, never after it with older
	// counts.
	mu      sync.Mutex
	stopped bool
	warned  bool
}

// startDaySaver returns the run's saver, or nil when the run keeps no
// daily counts (a nil saver ignores changed and stop).
func (r *run) startDaySaver() *daySaver {
	if r.cfg.Days == nil || r.cfg.Store == nil {
		return nil
	}
	s := &daySaver{r: r}
	s.timer = time.AfterFunc(time.Hour, s.fire)
	s.timer.Stop()
	return s
}

// changed says the counts changed: the next save is due within the
// interval. It costs an atomic load while a save is due.
func (s *daySaver) changed() {
	if s == nil || s.armed.Load() || !s.armed.CompareAndSwap(false, true) {
		return
	}
	s.timer.Reset(daySaveEvery)
}

// fire saves the counts, unless the run has ended. A failure is logged
// once; the run's last save reports its own.
func (s *daySaver) fire() {
	s.armed.Store(false) // a change from now on is saved by the next fire
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if err := s.r.saveDays(); err != nil && !s.warned {
		s.warned = true
		s.r.cfg.Log.Warn("saving the daily counts: " + err.Error() + "; the run's end tries again")
	}
}

// stop ends the periodic saves before the run's last one; a save under
// way finishes first.
func (s *daySaver) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.timer.Stop()
}
