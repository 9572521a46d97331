package report

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// AttemptLog is one sent attempt as the Debug log (-v) tells it: which
// request, where, how it ended and how long it took. Never a key, a
// header or a body.
type AttemptLog struct {
	ID           string
	Line         int
	Provider     string
	Model        string
	Hop, Attempt int
	Sent         time.Time
	Cut          bool
	Resp         *providers.Response
	Err          error
}

// LogAttempt writes a at Debug level on log.
func LogAttempt(log *slog.Logger, a AttemptLog) {
	attrs := []slog.Attr{
		slog.String("id", a.ID), slog.Int("line", a.Line),
		slog.String("provider", a.Provider), slog.String("model", a.Model),
		slog.Int("hop", a.Hop), slog.Int("attempt", a.Attempt),
		slog.Int64("ms", time.Since(a.Sent).Milliseconds()),
	}
	msg := "attempt answered"
	switch {
	case a.Cut:
		msg = "attempt cut by shutdown"
	case a.Resp != nil:
		attrs = append(attrs, slog.Int("status", a.Resp.Status), slog.Int64("ttft_ms", a.Resp.TTFT.Milliseconds()),
			slog.Int64("input_tokens", a.Resp.Usage.InputTokens), slog.Int64("output_tokens", a.Resp.Usage.OutputTokens))
	default:
		msg = "attempt failed"
		var pe *providers.Error
		if errors.As(a.Err, &pe) {
			attrs = append(attrs, slog.Int("status", pe.Status))
		}
		attrs = append(attrs, slog.String("class", providers.ClassOf(a.Err).String()), slog.String("cause", providers.Cause(a.Err)))
	}
	log.LogAttrs(context.Background(), slog.LevelDebug, msg, attrs...)
}
