package source

import (
	"io"
	"runtime"
	"sync"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/providers"
)

// parsed is one request of the check pass, parsed.
type parsed struct {
	req      *providers.Request
	repaired bool // its invalid UTF-8 was replaced (Parser.LossyUTF8)
	inShard  bool
	fp       checkpoint.Fingerprint // for the Source's Route; 0 without one
}

// checkBatchLines is how many lines a worker of the check pass parses at a
// time: enough that handing batches around costs little per line.
const checkBatchLines = 512

// maxCheckWorkers bounds the goroutines that parse: beyond a few, reading
// the lines and the in-order part are the bottleneck.
const maxCheckWorkers = 4

// checkBatch is a run of lines the check pass reads on one goroutine and
// parses on another.
type checkBatch struct {
	buf   []byte // the lines, one after another
	ends  []int  // where each line ends in buf
	nums  []int  // each line's number
	out   []parsed
	errs  []error // each line's parse error (nil: parsed)
	err   error   // the read error after the batch's lines (nil: none, or EOF)
	last  bool    // the input ends after this batch (or err)
	ready chan struct{}
}

// parseAll parses every record of lr and calls fn with each, in input
// order, stopping at the first parse or read error (an *InputError naming
// the line) or the first error of fn. The parsing, most of the check's
// cost, runs on several goroutines when there are CPUs for them.
func (s *Source) parseAll(lr recordReader, fps *Fingerprinter, fn func(parsed) error) error {
	workers := min(runtime.GOMAXPROCS(0), maxCheckWorkers)
	if s.checkWorkers > 0 {
		workers = s.checkWorkers
	}
	if workers < 2 {
		return s.parseSerially(lr, fps, fn)
	}

	inFlight := 2*workers + 2
	free := make(chan *checkBatch, inFlight)
	for range inFlight {
		free <- &checkBatch{}
	}
	work := make(chan *checkBatch, inFlight)
	order := make(chan *checkBatch, inFlight) // the batches in input order
	quit := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(quit)
		wg.Wait() // the reader reads the input, which the caller closes next
	}()

	wg.Add(1 + workers)
	go func() {
		defer wg.Done()
		readBatches(lr, free, order, work, quit)
	}()
	for range workers {
		go func() {
			defer wg.Done()
			for b := range work {
				s.parseBatch(b, fps)
			}
		}()
	}

	for b := range order {
		select {
		case <-b.ready:
		case <-quit:
			return nil
		}
		for i := range b.out {
			if b.errs[i] != nil {
				return b.errs[i]
			}
			if err := fn(b.out[i]); err != nil {
				return err
			}
			b.out[i] = parsed{} // let the request go
		}
		if b.err != nil {
			return b.err
		}
		if b.last {
			return nil
		}
		free <- b
	}
	return nil
}

// parseSerially is parseAll on one goroutine.
func (s *Source) parseSerially(lr recordReader, fps *Fingerprinter, fn func(parsed) error) error {
	return eachRecord(lr, func(line []byte, n int) error {
		p, err := s.parseOne(line, n, fps)
		if err != nil {
			return err
		}
		return fn(p)
	})
}

// readBatches fills the free batches from lr and hands each to order
// (for the caller, in input order) and to work (for the parsers), until
// the input ends or quit closes; it closes work and order when it returns.
func readBatches(lr recordReader, free <-chan *checkBatch, order, work chan<- *checkBatch, quit <-chan struct{}) {
	defer close(work)
	defer close(order)
	for {
		var b *checkBatch
		select {
		case b = <-free:
		case <-quit:
			return
		}
		b.fill(lr)
		for _, ch := range []chan<- *checkBatch{order, work} {
			select {
			case ch <- b:
			case <-quit:
				return
			}
		}
		if b.last {
			return
		}
	}
}

// parseBatch parses b's lines and marks it ready.
func (s *Source) parseBatch(b *checkBatch, fps *Fingerprinter) {
	start := 0
	for i, end := range b.ends {
		b.out[i], b.errs[i] = s.parseOne(b.buf[start:end], b.nums[i], fps)
		start = end
	}
	close(b.ready)
}

// fill reads the next lines of lr into b.
func (b *checkBatch) fill(lr recordReader) {
	b.buf, b.ends, b.nums, b.err, b.last = b.buf[:0], b.ends[:0], b.nums[:0], nil, false
	b.ready = make(chan struct{})
	for len(b.ends) < checkBatchLines {
		line, n, err := lr.next()
		if err != nil {
			if err != io.EOF {
				b.err = err
			}
			b.last = true
			break
		}
		b.buf = append(b.buf, line...)
		b.ends = append(b.ends, len(b.buf))
		b.nums = append(b.nums, n)
	}
	b.out = resize(b.out, len(b.ends))
	b.errs = resize(b.errs, len(b.ends))
}

// resize returns s with n zero elements, reusing its array if it can.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// parseOne parses the line numbered n for the check pass.
func (s *Source) parseOne(line []byte, n int, fps *Fingerprinter) (parsed, error) {
	req, repaired, err := s.Parser.parse(line, n)
	if err != nil {
		return parsed{}, &InputError{Path: s.name(), Line: n, Msg: err.Error()}
	}
	p := parsed{req: req, repaired: repaired, inShard: s.Shard.Has(req.ID)}
	if p.inShard && fps != nil {
		p.fp = fps.Of(req)
	}
	return p, nil
}
