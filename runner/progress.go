package runner

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// ProgressMode selects how progress reaches stderr.
type ProgressMode int

const (
	// ProgressLog prints a plain line every interval (cron, CI, pipes).
	ProgressLog ProgressMode = iota
	// ProgressBar draws a progress bar (a terminal).
	ProgressBar
	// ProgressOff prints nothing but the final summary.
	ProgressOff
)

// Progress reports a run's counters while it runs. It only reads counters.
type Progress struct {
	Mode     ProgressMode
	Out      io.Writer
	Interval time.Duration // between log lines; default 5s
	// Status, if set, adds a word about the run's state ("provider down, holding").
	Status func() string

	stop chan struct{}
	done sync.WaitGroup
}

// Start begins reporting c until Stop.
func (p *Progress) Start(c *Counters) {
	if p == nil || p.Mode == ProgressOff || p.Out == nil {
		return
	}
	p.stop = make(chan struct{})
	interval := p.Interval
	var bar *progressbar.ProgressBar
	if p.Mode == ProgressBar {
		interval = 200 * time.Millisecond
		bar = progressbar.NewOptions64(c.Total.Load(),
			progressbar.OptionSetWriter(p.Out),
			progressbar.OptionSetDescription("llmrun"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("req"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	if interval <= 0 {
		interval = 5 * time.Second
	}
	start := time.Now()
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				if bar != nil {
					_ = bar.Finish()
				}
				return
			case <-t.C:
				if bar != nil {
					bar.Describe(p.describe(c))
					_ = bar.Set64(c.Done())
				} else {
					fmt.Fprintf(p.Out, "llmrun: %s %s\n", p.line(c), rateETA(c, time.Since(start)))
				}
			}
		}
	}()
}

// Stop ends reporting and waits for the reporter to finish.
func (p *Progress) Stop() {
	if p == nil || p.stop == nil {
		return
	}
	close(p.stop)
	p.done.Wait()
	p.stop = nil
}

func (p *Progress) describe(c *Counters) string {
	s := fmt.Sprintf("in flight %d, retries %d, 429s %d", c.InFlight.Load(), c.Retries.Load(), c.RateLimited.Load())
	if spent := c.Spent(); spent > 0 {
		s += fmt.Sprintf(", spent %v", spent)
	}
	if p.Status != nil {
		if st := p.Status(); st != "" {
			s += ", " + st
		}
	}
	return s
}

func (p *Progress) line(c *Counters) string {
	return fmt.Sprintf("done=%d/%d succeeded=%d failed=%d skipped=%d %s",
		c.Done(), c.Total.Load(), c.Succeeded.Load(), c.Failed.Load(), c.Skipped.Load(), p.describe(c))
}

// rateETA is the answered-per-second rate since start and the time left
// at that rate.
func rateETA(c *Counters, elapsed time.Duration) string {
	answered := c.Succeeded.Load() + c.Failed.Load()
	s := fmt.Sprintf("elapsed=%s", elapsed.Round(time.Second))
	if answered == 0 || elapsed <= 0 {
		return s
	}
	rate := float64(answered) / elapsed.Seconds()
	left := c.Total.Load() - c.Done()
	eta := time.Duration(float64(left) / rate * float64(time.Second))
	return fmt.Sprintf("%s rate=%.1f/s eta=%s", s, rate, eta.Round(time.Second))
}
