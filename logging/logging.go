// Package logging builds the one *slog.Logger a command passes down: lines
// a person reads ("llmrun: warning: …", with a timestamp when stderr is
// not a terminal, so cron and CI logs say when), or JSON for log
// shippers. Nothing here is package state: every logger is built from
// Options and handed to whoever logs.
package logging

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Formats of --log-format.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// Options configure a logger.
type Options struct {
	// Format is FormatText (default) or FormatJSON.
	Format string
	// Verbose logs Debug records too (-v: one line per attempt).
	Verbose bool
	// Timestamps starts each text line with the time (stderr is not a
	// terminal). JSON records always carry it.
	Timestamps bool
	// Now reads the clock for timestamps; nil means the record's time.
	Now func() time.Time
}

// ParseFormat checks a --log-format value.
func ParseFormat(s string) (string, error) {
	switch s {
	case "", FormatText:
		return FormatText, nil
	case FormatJSON:
		return FormatJSON, nil
	}
	return "", fmt.Errorf("want text or json, not %q", s)
}

// New returns a logger writing to w.
func New(w io.Writer, o Options) *slog.Logger {
	level := slog.LevelInfo
	if o.Verbose {
		level = slog.LevelDebug
	}
	if o.Format == FormatJSON {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(&lineHandler{w: w, mu: new(sync.Mutex), level: level, stamps: o.Timestamps, now: o.Now})
}

// Discard is a logger that drops everything.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// lineHandler writes one line per record: [time ]llmrun: [warning: ]msg
// k=v… Group attributes are skipped: they carry the structured copy of
// what the message already says (for JSON), such as a progress line's
// counters.
type lineHandler struct {
	w      io.Writer
	mu     *sync.Mutex
	level  slog.Level
	stamps bool
	now    func() time.Time
	attrs  []slog.Attr // from WithAttrs
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	if h.stamps {
		t := r.Time
		if h.now != nil {
			t = h.now()
		}
		b.WriteString(t.Format("2006-01-02T15:04:05.000Z07:00"))
		b.WriteByte(' ')
	}
	b.WriteString("llmrun: ")
	if r.Level >= slog.LevelWarn && r.Level < slog.LevelError {
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		appendAttr(&b, a)
	}
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

func appendAttr(b *bytes.Buffer, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) || a.Value.Kind() == slog.KindGroup {
		return
	}
	b.WriteByte(' ')
	b.WriteString(a.Key)
	b.WriteByte('=')
	s := a.Value.String()
	if s == "" || strings.ContainsAny(s, " \"=\n\t") {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

// WithGroup returns h unchanged: a line has no groups (see lineHandler).
func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// Writer adapts l to code that writes lines to an io.Writer: each line
// written is one record at level, without a leading "llmrun: ".
func Writer(l *slog.Logger, level slog.Level) io.Writer {
	return &lineWriter{l: l, level: level}
}

type lineWriter struct {
	l     *slog.Logger
	level slog.Level
	mu    sync.Mutex
	buf   []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	rest := 0
	for {
		i := bytes.IndexByte(w.buf[rest:], '\n')
		if i < 0 {
			break
		}
		line := strings.TrimPrefix(string(w.buf[rest:rest+i]), "llmrun: ")
		w.l.Log(context.Background(), w.level, line)
		rest += i + 1
	}
	w.buf = append(w.buf[:0], w.buf[rest:]...)
	return len(p), nil
}
