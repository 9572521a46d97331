package runner

import "context"

// takeSlot takes one of the run's in-flight slots (r.slots, one per
// attempt being sent), or reports false when ctx ends first. The
// reservation holds it (see reservation).
func (r *run) takeSlot(ctx context.Context) bool {
	select {
	case r.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// freeSlot gives back a slot takeSlot took.
func (r *run) freeSlot() { <-r.slots }
