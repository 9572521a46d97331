package runner

import "github.com/llmrun/llmrun/report"

// enqueue counts an attempt of priority p waiting for key's admission,
// when an observer watches the run (only watched runs count).
func (r *run) enqueue(key string, p int) report.Queued {
	if r.cfg.Observer == nil {
		return report.Queued{}
	}
	return r.queues.Enter(key, p)
}

// Queues are the attempts waiting for admission now, by budget key and
// priority class (every pair the run has used, 0 when none waits),
// sorted by key, then priority from the highest.
func (v *View) Queues() []report.QueueDepth { return v.r.queues.Depths() }
