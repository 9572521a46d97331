package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/rivo/uniseg"
	"github.com/schollz/progressbar/v3"
)

// barMargin is the columns a frame leaves free at the right edge. A frame
// that filled the last column would leave the cursor past it, and the
// "^C" the terminal echoes on Ctrl-C would wrap to a new line, stranding
// the frame above the summary; two spare columns keep the echo on the
// bar's line, where clearing the line clears both.
const barMargin = 2

// ttyBar draws the progress on a terminal with progressbar/v3: the
// library draws the percentage, the bar, the count, the rate and the
// elapsed and remaining time; llmrun's own status (failures, cost,
// tokens, why it waits) is the bar's description, at the line's end,
// fitted to the columns the library's part leaves. The bar has a fixed
// number of cells for a given terminal width (the library measures
// nothing: it writes to a buffer, not the terminal), so it does not
// jump about as the figures around it change length.
type ttyBar struct {
	out   io.Writer
	width int // the terminal's columns the bar was laid out for
	max   int64
	buf   bytes.Buffer
	pb    *progressbar.ProgressBar
	last  string // the last frame drawn
}

// barCells is the bar's width in cells for a terminal of width columns:
// enough to see it move, leaving room for the figures after it.
func barCells(width int) int {
	switch {
	case width >= 160:
		return 40
	case width >= 120:
		return 30
	case width >= 90:
		return 20
	case width >= 70:
		return 12
	}
	return 8
}

func newTTYBar(out io.Writer, width int, max int64) *ttyBar {
	b := &ttyBar{out: out, width: width, max: max}
	b.pb = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(&b.buf),
		progressbar.OptionSetWidth(barCells(width)),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionSetTheme(progressbar.Theme{Saucer: "=", SaucerHead: ">", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}),
	)
	return b
}

// frame renders s: the library's part for its counts, then the status
// fitted to what is left of width. It returns "" when there is nothing to
// draw (nothing to send).
func (b *ttyBar) frame(s snapshot) string {
	if b.max <= 0 {
		return ""
	}
	answered := min(s.succeeded+s.failed, b.max)
	b.pb.Set64(answered)
	b.buf.Reset()
	b.pb.Describe("")
	head := clean(b.buf.String())
	if head == "" { // the library draws nothing once finished: keep the last frame
		return b.last
	}
	room := b.width - barMargin - columns(head) - 1
	desc := fitStatus(s.segments(), room)
	b.buf.Reset()
	b.pb.Describe(desc)
	f := clean(b.buf.String())
	if f == "" {
		f = head
	}
	b.last = cutColumns(f, b.width-barMargin)
	return b.last
}

// clean is a frame as the library wrote it, without its carriage return,
// line-clearing code and trailing space.
func clean(s string) string {
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.ReplaceAll(s, "\x1b[0K", "")
	s = strings.ReplaceAll(s, "\x1b[2K", "")
	return strings.TrimRight(s, " ")
}

// draw writes s's frame over the current line.
func (b *ttyBar) draw(s snapshot) {
	if f := b.frame(s); f != "" {
		fmt.Fprint(b.out, "\r"+f+"\x1b[K")
	}
}

// columns is how many terminal columns s takes: its runes when each takes
// one (what llmrun writes), else what uniseg measures (a server's message
// in the status may hold wide or combining characters).
func columns(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x300 && r != '·' && r != '…' && r != '×' {
			return uniseg.StringWidth(s)
		}
		n++
	}
	return n
}

// cutColumns shortens s to at most width columns, marking a cut with "…".
func cutColumns(s string, width int) string {
	if columns(s) <= width {
		return s
	}
	if width <= 0 {
		return ""
	}
	var out strings.Builder
	w := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		cw := g.Width()
		if w+cw > width-1 {
			break
		}
		out.WriteString(g.Str())
		w += cw
	}
	return out.String() + "…"
}

// fitStatus is the description after the bar: the segments, in display
// order, that fit in room columns. When they do not all fit, the least
// important take their short form first, then are dropped, a whole rank at
// a time; then what still fits is given back part by part, most important
// first. The order never changes, so a part does not jump about between
// frames; whatever happens the text is at most room columns.
func fitStatus(segs []segment, room int) string {
	if room <= 0 {
		return ""
	}
	l := &partsLine{segs: segs, short: map[int]bool{}, drop: map[int]bool{}}
	fits := func(t string) bool { return columns(t) <= room }
	l.shrink(fits)
	l.giveBack(fits)
	return cutColumns(l.text(), room)
}

// segments are the parts of the status after the bar, in display order,
// with how much each matters (higher stays longer). The library shows
// the count, rate and times; these are what it does not know.
func (s snapshot) segments() []segment {
	var segs []segment
	add := func(rank int, full, short string) { segs = append(segs, segment{full, short, rank}) }
	// Failures always, even none: "0 failed" is news too.
	add(9, fmt.Sprintf("%d failed", s.failed), fmt.Sprintf("%d fail", s.failed))
	if s.status != "" {
		add(8, s.status, cut(s.status, 24))
	}
	if s.spendWaiting > 0 {
		add(8, s.spendWaitingWords(), fmt.Sprintf("%d wait --max-cost", s.spendWaiting))
	}
	if s.dayWaiting > 0 {
		add(8, s.dayWaitingWords(), s.dayWaitingShort())
	}
	if s.spent > 0 {
		add(7, s.spent.String()+" spent", s.spent.String())
	}
	if s.tokensIn+s.tokensOut > 0 {
		add(5, fmt.Sprintf("%s in / %s out tokens", count(s.tokensIn), count(s.tokensOut)), fmt.Sprintf("%s/%s tok", count(s.tokensIn), count(s.tokensOut)))
	}
	if s.rateLimited > 0 {
		add(4, plural(s.rateLimited, "429", "429s"), fmt.Sprintf("%d×429", s.rateLimited))
	}
	if s.skipped > 0 {
		add(3, fmt.Sprintf("%d done before", s.skipped), fmt.Sprintf("%d resumed", s.skipped))
	}
	if s.cacheHits > 0 {
		add(6, fmt.Sprintf("%d from cache ($%.4f saved)", s.cacheHits, s.cacheSaved), fmt.Sprintf("%d cached", s.cacheHits))
	}
	return segs
}
