package report

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// QueueDepth is how many attempts of one priority class wait for one
// budget key's admission now.
type QueueDepth struct {
	Key      string
	Priority int
	Waiting  int64
}

// queueKey names one queue: a budget key and a priority class.
type queueKey struct {
	key      string
	priority int
}

// Queues counts the attempts waiting for admission by key and priority
// class, for the observers: the budget (local or shared) keeps one queue
// per key and says only its length. The zero value is ready to use.
type Queues struct {
	mu sync.Mutex
	m  map[queueKey]*atomic.Int64
}

// Queued is one attempt's place in the count; Leave takes it out (the
// zero value counts nothing).
type Queued struct{ n *atomic.Int64 }

// Leave takes the attempt out of its queue's count.
func (q Queued) Leave() {
	if q.n != nil {
		q.n.Add(-1)
	}
}

// Enter counts an attempt of priority p waiting for key's admission.
func (b *Queues) Enter(key string, p int) Queued {
	k := queueKey{key, p}
	b.mu.Lock()
	n := b.m[k]
	if n == nil {
		if b.m == nil {
			b.m = make(map[queueKey]*atomic.Int64)
		}
		n = new(atomic.Int64)
		b.m[k] = n
	}
	b.mu.Unlock()
	n.Add(1)
	return Queued{n}
}

// Depths are the attempts waiting now, by key and priority class (every
// pair entered so far, 0 when none waits), sorted by key, then priority
// from the highest.
func (b *Queues) Depths() []QueueDepth {
	b.mu.Lock()
	out := make([]QueueDepth, 0, len(b.m))
	for k, n := range b.m {
		out = append(out, QueueDepth{Key: k.key, Priority: k.priority, Waiting: n.Load()})
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(a, b QueueDepth) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(b.Priority, a.Priority))
	})
	return out
}
