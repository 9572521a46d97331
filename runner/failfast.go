package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/providers"
)

// DefaultFailFast is how many first attempts judge a run's setup (the
// CLI's --fail-fast default).
const DefaultFailFast = 10

// failFast stops a misconfigured run after its first n attempts instead
// of failing every request one at a time: a base URL without /v1, an
// unknown model or a server that rejects the stream flags fails a
// million-line input a million times. While armed, at most n attempts
// whose verdict is unknown are out at once, so the server sees at most n
// before the run stops; the first answer, or a failure unlike the first,
// disarms it for good. Transient failures (429s, 5xx, network) say
// nothing about the setup: their place is given back. Safe for
// concurrent use; the zero value (n 0) is disarmed.
type failFast struct {
	n int

	mu     sync.Mutex
	armed  bool
	out    int // attempts admitted while armed and not yet judged
	judged int // attempts that failed alike, non-retryably
	sig    string
	first  error
	wake   chan struct{} // closed when a place frees or it disarms
}

func newFailFast(n int) *failFast {
	return &failFast{n: n, armed: n > 0, wake: make(chan struct{})}
}

// acquire waits for a place for one attempt; it reports false when ctx
// ended first. Disarmed, it returns at once.
func (f *failFast) acquire(ctx context.Context) (held bool, ok bool) {
	for {
		f.mu.Lock()
		if !f.armed {
			f.mu.Unlock()
			return false, true
		}
		if f.out+f.judged < f.n {
			f.out++
			f.mu.Unlock()
			return true, true
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false, false
		}
	}
}

// release gives back the place of an attempt that says nothing about the
// setup (never sent, cut by shutdown, or failed transiently).
func (f *failFast) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed {
		f.out--
		f.signal()
	}
}

// judge records the verdict of an attempt that held a place, and returns
// the error that stops the run once n attempts have failed alike.
func (f *failFast) judge(o attemptOutcome) error {
	class := o.class()
	if o.resp == nil && (o.cut || o.sent.IsZero() || class.Retryable()) {
		f.release()
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed {
		return nil
	}
	f.out--
	sig := signature(o.err)
	switch {
	case o.resp != nil, f.judged > 0 && sig != f.sig:
		f.armed = false
	case f.judged == 0:
		f.sig, f.first = sig, o.err
		f.judged = 1
	default:
		f.judged++
	}
	f.signal()
	if f.armed && f.judged >= f.n {
		f.armed = false
		return &ending.FailFastError{Attempts: f.judged, Err: f.first}
	}
	return nil
}

// signal wakes the waiters; f.mu is held.
func (f *failFast) signal() {
	close(f.wake)
	f.wake = make(chan struct{})
}

// signature is what makes two failures the same: class, status, the
// provider's type and code, and its message (which often names the
// model or the path).
func signature(err error) string {
	var pe *providers.Error
	if errors.As(err, &pe) {
		return fmt.Sprintf("%d|%d|%s|%s|%s", pe.Class, pe.Status, pe.Type, pe.Code, pe.Message)
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
