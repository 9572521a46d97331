package report

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
		var bar *ttyBar
		for {
			select {
			case <-p.stop:
				if p.Mode == ProgressBar {
					fmt.Fprint(p.Out, "\r\x1b[K") // the summary takes its place
				}
				return
			case <-t.C:
				s := p.snapshot(c, time.Since(start))
				if p.Mode == ProgressBar {
					bar = p.drawBar(bar, s)
				} else {
					p.Log.Info(s.line(), slog.Group("progress", s.attrs()...))
				}
			}
		}
	}()
}

// drawBar draws s on the terminal with bar, made at the first frame (for
// the terminal's width then) and given the requests left to send as its
// total: those an earlier run answered are not this run's work, and
// counting them would make the rate a lie.
func (p *Progress) drawBar(bar *ttyBar, s snapshot) *ttyBar {
	toSend := max(s.total-s.skipped, 0)
	width := p.width()
	if bar == nil {
		bar = newTTYBar(p.Out, width, toSend)
	}
	if toSend != bar.max && toSend > 0 {
		bar.max = toSend
		bar.pb.ChangeMax64(toSend)
	}
	bar.width = width
	bar.draw(s)
	return bar
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
	inFlight, rateLimited, spendWaiting              int64 // spendWaiting: for --max-cost room
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
	// dayWaiting wait for a daily limit; dayReset is the soonest reset
	// they wait for (zero: none), dayResetIn the time until it.
	dayWaiting int64
	dayReset   time.Time
	dayResetIn time.Duration
}

func (p *Progress) snapshot(c *Counters, elapsed time.Duration) snapshot {
	s := snapshot{
		total: c.Total.Load(), succeeded: c.Succeeded.Load(), failed: c.Failed.Load(), skipped: c.Skipped.Load(),
		inFlight: c.InFlight.Load(), rateLimited: c.RateLimited.Load(), spendWaiting: c.SpendWaiting.Load(),
		tokensIn: c.InputTokens.Load(), tokensOut: c.OutputTokens.Load(), spent: c.Spent(), elapsed: elapsed,
		cacheHits: c.CacheHits.Load(), cacheSaved: c.SavedUSD(),
	}
	s.done = s.succeeded + s.failed + s.skipped
	s.pending = max(s.total-s.done, 0)
	if answered := s.succeeded + s.failed; answered > 0 && elapsed > 0 {
		s.rate = float64(answered) / elapsed.Seconds()
		s.eta = time.Duration(float64(s.pending) / s.rate * float64(time.Second))
	}
	if s.dayWaiting = c.DayWaiting.Load(); s.dayWaiting > 0 {
		if at := c.DayReset.Load(); at != 0 {
			s.dayReset = time.Unix(0, at)
			s.dayResetIn = max(time.Until(s.dayReset), 0)
		}
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

// line is the progress as one log line, every part at full length.
func (s snapshot) line() string {
	parts := []string{fmt.Sprintf("%d/%d done (%d succeeded, %d skipped)", s.done, s.total, s.succeeded, s.skipped)}
	if s.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", s.failed))
	}
	parts = append(parts, fmt.Sprintf("%d pending", s.pending))
	if s.rate > 0 {
		parts = append(parts, fmt.Sprintf("%s/s, eta %s", rateString(s.rate), durString(s.eta)))
	}
	if s.tokensIn+s.tokensOut > 0 {
		parts = append(parts, fmt.Sprintf("%s in / %s out tokens", count(s.tokensIn), count(s.tokensOut)))
	}
	if s.rateLimited > 0 {
		parts = append(parts, plural(s.rateLimited, "429", "429s"))
	}
	if s.spent > 0 {
		parts = append(parts, s.spent.String()+" spent")
	}
	if s.cacheHits > 0 {
		parts = append(parts, fmt.Sprintf("%d from cache ($%.4f saved)", s.cacheHits, s.cacheSaved))
	}
	if s.spendWaiting > 0 {
		parts = append(parts, s.spendWaitingWords())
	}
	if s.dayWaiting > 0 {
		parts = append(parts, s.dayWaitingWords())
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
		slog.Int64("waiting_for_max_cost", s.spendWaiting), slog.Int64("waiting_for_daily_limit", s.dayWaiting),
		slog.Int64("input_tokens", s.tokensIn), slog.Int64("output_tokens", s.tokensOut),
		slog.Float64("cost_usd", s.spent.USD()), slog.Float64("rate_per_second", s.rate),
		slog.Float64("eta_seconds", s.eta.Seconds()), slog.Float64("elapsed_seconds", s.elapsed.Seconds()),
	}
}

// spendWaitingWords says how many requests wait for --max-cost room: a
// run whose every worker waits for answers in flight to settle would
// otherwise look hung.
func (s snapshot) spendWaitingWords() string {
	return fmt.Sprintf("%d waiting for %s", s.spendWaiting, Words(MaxCostWait))
}

// dayWaitingWords says how many requests wait for a daily limit, and
// for when: "3 waiting for the daily limit to reset (at 00:00 UTC, in
// 3h12m)" with --wait-daily, else for the attempts in flight that hold
// the day's last units. It is not an outage: the breaker's "provider
// down, holding" would have the user look for a fault that is not there.
func (s snapshot) dayWaitingWords() string {
	w := fmt.Sprintf("%d waiting for %s", s.dayWaiting, Words(DailyWait))
	if s.dayReset.IsZero() {
		return w + " (attempts in flight hold its last units)"
	}
	return fmt.Sprintf("%s to reset (at %s, in %s)", w, s.dayReset.UTC().Format("15:04 MST"), durString(s.dayResetIn))
}

// dayWaitingShort is dayWaitingWords for a narrow terminal.
func (s snapshot) dayWaitingShort() string {
	if s.dayReset.IsZero() {
		return fmt.Sprintf("%d wait daily limit", s.dayWaiting)
	}
	return fmt.Sprintf("%d wait day reset %s", s.dayWaiting, durString(s.dayResetIn))
}

// partSep separates the parts of the progress line.
const partSep = " · "

// partsLine is the status after the bar: each segment in its full or
// short form, or dropped.
type partsLine struct {
	segs        []segment
	short, drop map[int]bool // by index in segs
}

func (l *partsLine) text() string {
	var parts []string
	for i, seg := range l.segs {
		switch {
		case l.drop[i]:
		case l.short[i]:
			parts = append(parts, seg.short)
		default:
			parts = append(parts, seg.full)
		}
	}
	return strings.Join(parts, partSep)
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
// takes more than it must; this takes back the surplus part by part. A
// part that cannot come back keeps every less important one out, so no
// part is ever shown while a more important one is not.
func (l *partsLine) giveBack(fits func(string) bool) {
	blocked := false
	for rank := 9; rank >= 0; rank-- {
		for i, seg := range l.segs {
			if seg.rank != rank || (blocked && l.drop[i]) {
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
			if l.drop[i] {
				blocked = true
			}
		}
	}
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
