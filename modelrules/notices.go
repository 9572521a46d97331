package modelrules

import "sync"

// Notices says each kind of rewrite once: a run rewrites the same way for
// every line of a model, and reads its input more than once.
type Notices struct {
	// Say receives each message the first time its key is seen.
	Say  func(msg string)
	mu   sync.Mutex
	seen map[string]bool
}

// Note passes on the changes not said before. A nil Notices says nothing.
func (n *Notices) Note(changes []Change) {
	if n == nil || n.Say == nil || len(changes) == 0 {
		return
	}
	var say []string
	n.mu.Lock()
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	for _, c := range changes {
		if !n.seen[c.Key] {
			n.seen[c.Key] = true
			say = append(say, c.Msg)
		}
	}
	n.mu.Unlock()
	for _, m := range say {
		n.Say(m)
	}
}
