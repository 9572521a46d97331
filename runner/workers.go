package runner

import (
	"golang.org/x/sync/errgroup"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/providers"
)

// work is one request handed to a worker.
type work struct {
	req *providers.Request
	fp  checkpoint.Fingerprint
}

// workers take requests through process. A worker is started only when
// none is idle, up to the group's limit, and goes on to the next request:
// a goroutine per request grew a fresh stack through the HTTP client's
// depth every time (3% of a plain request's CPU).
type workers struct {
	do   func(work)
	g    *errgroup.Group
	jobs chan work
	// started counts the workers started (the producer's alone).
	started int
}

func (r *run) newWorkers(g *errgroup.Group) *workers {
	return newWorkers(g, func(w work) { r.process(w.req, w.fp) })
}

func newWorkers(g *errgroup.Group, do func(work)) *workers {
	return &workers{do: do, g: g, jobs: make(chan work)}
}

// hand gives w to an idle worker, or starts one; at the group's limit it
// waits for a worker to be free, as errgroup.Go would.
func (ws *workers) hand(w work) {
	select {
	case ws.jobs <- w:
		return
	default:
	}
	started := ws.g.TryGo(func() error {
		ws.do(w)
		for next := range ws.jobs {
			ws.do(next)
		}
		return nil
	})
	if !started {
		ws.jobs <- w
		return
	}
	ws.started++
}

// close lets the workers end once the requests handed out are done.
func (ws *workers) close() { close(ws.jobs) }
