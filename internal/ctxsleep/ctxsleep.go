// Package ctxsleep is the one sleep that a context can cut short, for the
// waits of the run, the mock and the job (retry-after pauses, token delays,
// per-day resets).
package ctxsleep

import (
	"context"
	"time"
)

// For waits d or until ctx ends; it reports whether the full wait elapsed.
// A wait of d <= 0 is over at once: true unless ctx has ended.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
