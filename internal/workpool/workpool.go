// Package workpool hands jobs to reused workers under an errgroup's limit.
// A goroutine per job grows a fresh stack through the HTTP client's depth
// every time (3% of a plain request's CPU in the live run); a worker that
// goes on to the next job pays that once.
package workpool

import "golang.org/x/sync/errgroup"

// Pool takes jobs through do. A worker is started only when none is idle,
// up to the group's limit, and goes on to the next job.
type Pool[T any] struct {
	do   func(T)
	g    *errgroup.Group
	jobs chan T
	// started counts the workers started (the producer's alone).
	started int
}

// New is a pool running do on g's goroutines.
func New[T any](g *errgroup.Group, do func(T)) *Pool[T] {
	return &Pool[T]{do: do, g: g, jobs: make(chan T)}
}

// Hand gives j to an idle worker, or starts one; at the group's limit it
// waits for a worker to be free, as errgroup.Go would. One goroutine
// hands jobs.
func (p *Pool[T]) Hand(j T) {
	select {
	case p.jobs <- j:
		return
	default:
	}
	started := p.g.TryGo(func() error {
		p.do(j)
		for next := range p.jobs {
			p.do(next)
		}
		return nil
	})
	if !started {
		p.jobs <- j
		return
	}
	p.started++
}

// Started is how many workers were started; read it from the goroutine
// that hands jobs.
func (p *Pool[T]) Started() int { return p.started }

// Close lets the workers end once the jobs handed out are done.
func (p *Pool[T]) Close() { close(p.jobs) }
