package runner

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmrun/llmrun/pricing"
)

// ProgressMode selects how progress reaches stderr.
type ProgressMode int

const (
	// ProgressLog logs a line every interval (cron, CI, pipes).
	ProgressLog ProgressMode = iota
	// ProgressBar redraws one line fitted to the terminal's width.
	ProgressBar
	// ProgressOff prints nothing but the final summary.
	ProgressOff
)

// Progress reports a run's counters while it runs. It only reads counters.
type Progress struct {
	Mode ProgressMode
	// Out is the terminal the bar is drawn on.
	Out io.Writer
	// Log receives the progress lines of ProgressLog.
	Log      *slog.Logger
	Interval time.Duration // between log lines; default 5s
	// Width is the terminal's width in columns, read at every redraw (the
	// window may be resized); nil or ≤ 0 means 80.
	Width func() int
	// Status, if set, adds a word about the run's state ("provider down
	// (connection refused), holding").
	Status func() string

	stop chan struct{}
	done sync.WaitGroup
}

// Start begins reporting c until Stop.
func (p *Progress) Start(c *Counters) {
	if p == nil || p.Mode == ProgressOff || (p.Mode == ProgressBar && p.Out == nil) || (p.Mode == ProgressLog && p.Log == nil) {
		return
	}
	p.stop = make(chan struct{})
	interval := p.Interval
	if p.Mode == ProgressBar {
		interval = 200 * time.Millisecond
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
				if p.Mode == ProgressBar {
					fmt.Fprint(p.Out, "\r\x1b[K") // the summary line takes its place
				}
				return
			case <-t.C:
				s := p.snapshot(c, time.Since(start))
				if p.Mode == ProgressBar {
					fmt.Fprint(p.Out, "\r"+s.bar(p.width())+"\x1b[K")
				} else {
					p.Log.Info(s.line(), slog.Group("progress", s.attrs()...))
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

func (p *Progress) width() int {
	if p.Width != nil {
		if w := p.Width(); w > 0 {
			return w
		}
	}
	return 80
}

// snapshot is what one progress report shows.
type snapshot struct {
	total, done, succeeded, failed, skipped, pending int64
	inFlight, rateLimited                            int64
	cacheHits                                        int64
	cacheSaved                                       float64
	tokensIn, tokensOut                              int64
	spent                                            pricing.Cost
	elapsed                                          time.Duration
	// rate is answered requests per second (0: none yet); eta the time
	// left at that rate (valid when rate > 0).
	rate   float64
	eta    time.Duration
	status string
}

func (p *Progress) snapshot(c *Counters, elapsed time.Duration) snapshot {
	s := snapshot{
		total: c.Total.Load(), succeeded: c.Succeeded.Load(), failed: c.Failed.Load(), skipped: c.Skipped.Load(),
		inFlight: c.InFlight.Load(), rateLimited: c.RateLimited.Load(),
		tokensIn: c.InputTokens.Load(), tokensOut: c.OutputTokens.Load(), spent: c.Spent(), elapsed: elapsed,
		cacheHits: c.CacheHits.Load(), cacheSaved: c.SavedUSD(),
	}
	s.done = s.succeeded + s.failed + s.skipped
	s.pending = max(s.total-s.done, 0)
	if answered := s.succeeded + s.failed; answered > 0 && elapsed > 0 {
		s.rate = float64(answered) / elapsed.Seconds()
		s.eta = time.Duration(float64(s.pending) / s.rate * float64(time.Second))
	}
	if p.Status != nil {
		s.status = p.Status()
	}
	return s
}

// segment is one part of the progress line: its text at full length and
// shorter, and how much it matters when the terminal is narrow (parts
// are dropped lowest first).
type segment struct {
	full, short string
	rank        int
}

// segments are the parts of the line after the counts, in display order.
func (s snapshot) segments() []segment {
	var segs []segment
	add := func(rank int, full, short string) { segs = append(segs, segment{full, short, rank}) }
	if s.failed > 0 {
		add(9, fmt.Sprintf("%d failed", s.failed), fmt.Sprintf("%d fail", s.failed))
	}
	add(8, fmt.Sprintf("%d pending", s.pending), fmt.Sprintf("%d left", s.pending))
	if s.rate > 0 {
		add(7, fmt.Sprintf("%s/s, eta %s", rateString(s.rate), durString(s.eta)), "eta "+durString(s.eta))
	}
	if s.tokensIn+s.tokensOut > 0 {
		add(4, fmt.Sprintf("%s in / %s out tokens", count(s.tokensIn), count(s.tokensOut)), fmt.Sprintf("%s/%s tok", count(s.tokensIn), count(s.tokensOut)))
	}
	if s.rateLimited > 0 {
		add(5, plural(s.rateLimited, "429", "429s"), fmt.Sprintf("%d×429", s.rateLimited))
	}
	if s.spent > 0 {
		add(6, s.spent.String()+" spent", s.spent.String())
	}
	if s.cacheHits > 0 {
		add(5, fmt.Sprintf("%d from cache ($%.4f saved)", s.cacheHits, s.cacheSaved), fmt.Sprintf("%d cached", s.cacheHits))
	}
	return segs
}

// line is the progress as one log line, every part at full length.
func (s snapshot) line() string {
	parts := []string{fmt.Sprintf("%d/%d done (%d succeeded, %d skipped)", s.done, s.total, s.succeeded, s.skipped)}
	for _, seg := range s.segments() {
		parts = append(parts, seg.full)
	}
	if s.status != "" {
		parts = append(parts, s.status)
	}
	return "progress " + strings.Join(parts, ", ")
}

// attrs are the progress's figures for structured logs.
func (s snapshot) attrs() []any {
	return []any{
		slog.Int64("total", s.total), slog.Int64("done", s.done), slog.Int64("succeeded", s.succeeded),
		slog.Int64("failed", s.failed), slog.Int64("skipped", s.skipped), slog.Int64("pending", s.pending),
		slog.Int64("in_flight", s.inFlight), slog.Int64("rate_limited", s.rateLimited),
		slog.Int64("input_tokens", s.tokensIn), slog.Int64("output_tokens", s.tokensOut),
		slog.Float64("cost_usd", s.spent.USD()), slog.Float64("rate_per_second", s.rate),
		slog.Float64("eta_seconds", s.eta.Seconds()), slog.Float64("elapsed_seconds", s.elapsed.Seconds()),
	}
}

// minBar is the narrowest bar worth drawing.
const minBar = 10

// bar is the progress as one terminal line of at most width columns:
// "45% [=====>    ] 4512/10000 · 12 failed · 5488 pending · 85/s, eta
// 1m04s · …". When the line does not fit, parts take their short form,
// then the least important are dropped, then the bar goes; the status
// ("provider down (…), holding") gets what is left, cut to it.
func (s snapshot) bar(width int) string {
	pct := 0
	if s.total > 0 {
		pct = int(100 * s.done / s.total)
	}
	head := fmt.Sprintf("%3d%%", pct)
	l := &partsLine{counts: fmt.Sprintf("%d/%d", s.done, s.total), segs: s.segments(), short: map[int]bool{}, drop: map[int]bool{}}
	// The status needs room for a few words to be worth showing, and
	// parts given back must leave it a few more.
	status, roomy := 0, 0
	if s.status != "" {
		status = runes(partSep) + min(runes(s.status), 16)
		roomy = runes(partSep) + min(runes(s.status), 32)
	}
	fitsWith := func(t string, room int) bool { return runes(head)+1+minBar+1+runes(t)+room <= width }
	fits := func(t string) bool { return fitsWith(t, status) }
	l.shrink(fits)
	l.giveBack(func(t string) bool { return fitsWith(t, roomy) })
	t := l.text()
	if !fits(t) {
		line := head + " " + t
		if s.status != "" {
			line += partSep + s.status
		}
		return cut(line, width)
	}
	barWidth := width - runes(head) - 1 - runes(t) - 1
	if s.status != "" {
		barWidth -= runes(partSep) + runes(s.status)
	}
	barWidth = min(max(barWidth, minBar), 40)
	line := head + " " + drawBar(s.done, s.total, barWidth) + " " + t
	if s.status != "" {
		line += partSep + s.status
	}
	return cut(line, width)
}

// partSep separates the parts of the progress line.
const partSep = " · "

// partsLine is the text after the bar: the counts, then each segment in
// its full or short form, or dropped.
type partsLine struct {
	counts      string
	segs        []segment
	short, drop map[int]bool // by index in segs
}

func (l *partsLine) text() string {
	t := l.counts
	for i, seg := range l.segs {
		switch {
		case l.drop[i]:
		case l.short[i]:
			t += partSep + seg.short
		default:
			t += partSep + seg.full
		}
	}
	return t
}

// shrink shortens, then drops, the parts lowest rank first, a whole rank
// at a time, until the text fits.
func (l *partsLine) shrink(fits func(string) bool) {
	for _, step := range []map[int]bool{l.short, l.drop} {
		for rank := 0; rank <= 9 && !fits(l.text()); rank++ {
			for i, seg := range l.segs {
				if seg.rank == rank {
					step[i] = true
				}
			}
		}
	}
}

// giveBack restores what still fits, most important first: a dropped part
// in its short form, a short part at full length. Shrinking by whole ranks
// takes more than it must; this takes back the surplus part by part.
func (l *partsLine) giveBack(fits func(string) bool) {
	for rank := 9; rank >= 0; rank-- {
		for i, seg := range l.segs {
			if seg.rank != rank {
				continue
			}
			for _, m := range []map[int]bool{l.drop, l.short} {
				if m[i] {
					m[i] = false
					if !fits(l.text()) {
						m[i] = true
					}
				}
			}
		}
	}
}

// drawBar is "[=====>    ]" in width columns.
func drawBar(done, total int64, width int) string {
	inner := width - 2
	fill := 0
	if total > 0 {
		fill = int(int64(inner) * min(done, total) / total)
	}
	if fill >= inner {
		return "[" + strings.Repeat("=", inner) + "]"
	}
	return "[" + strings.Repeat("=", fill) + ">" + strings.Repeat(" ", inner-fill-1) + "]"
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// cut shortens s to width columns, marking the cut with "…".
func cut(s string, width int) string {
	if runes(s) <= width {
		return s
	}
	if width <= 1 {
		return string([]rune(s)[:max(width, 0)])
	}
	return string([]rune(s)[:width-1]) + "…"
}

// count is n for a narrow line: 950, 1.2k, 3.4M, 1.1G.
func count(n int64) string {
	f := float64(n)
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1e6:
		return fmt.Sprintf("%.1fk", f/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1fM", f/1e6)
	}
	return fmt.Sprintf("%.1fG", f/1e9)
}

func rateString(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// durString is d rounded for a progress line: 45s, 3m20s, 2h05m.
func durString(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// plural is "1 request" or "2 requests".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
