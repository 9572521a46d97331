// Package pause is the one way llmrun waits: a duration, or less when the
// context ends first. The live run backs off and waits for a day's reset
// with it; the batch-API route paces its polls with it, so neither route
// needs the other's package for it.
package pause

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends; it reports whether the full wait
// elapsed.
func Sleep(ctx context.Context, d time.Duration) bool {
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
