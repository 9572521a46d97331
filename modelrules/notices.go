package modelrules

import "sync"

// Notices says each kind of rewrite once: a run rewrites the same way for
// every line of a model, and reads its input more than once.
type Notices struct {
	// Say receives each message the first time its key is seen.
	Say  func(msg string)
	seen sync.Map // key → struct{}; lock-free once said, as every line asks
}

// Note passes on the changes not said before. A nil Notices says nothing.
func (n *Notices) Note(changes []Change) {
	for _, c := range changes {
		n.Once(c.Key, func() string { return c.Msg })
	}
}

// Once says msg() the first time key is seen; msg is not called again,
// so a message that costs a Sprintf costs it once per run, not per line.
func (n *Notices) Once(key string, msg func() string) {
	if n == nil || n.Say == nil {
		return
	}
	if _, ok := n.seen.Load(key); ok {
		return
	}
	if _, loaded := n.seen.LoadOrStore(key, struct{}{}); !loaded {
		n.Say(msg())
	}
}
