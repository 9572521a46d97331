package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var at = time.Date(2026, 3, 4, 5, 6, 7, 890e6, time.UTC)

func TestLines(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, Options{Timestamps: true, Now: func() time.Time { return at }})
	l.Warn("cut to --max-pause", "key", "openai|m")
	l.Info("run aborted: provider down", slog.Group("summary", "failed", 3), "note", `has "quotes" and spaces`)
	l.Debug("not shown without -v")
	l.Error("bad flag")
	want := `2026-03-04T05:06:07.890Z llmrun: warning: cut to --max-pause key=openai|m
2026-03-04T05:06:07.890Z llmrun: run aborted: provider down note="has \"quotes\" and spaces"
2026-03-04T05:06:07.890Z llmrun: bad flag
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTerminalLinesHaveNoTime(t *testing.T) {
	var b bytes.Buffer
	New(&b, Options{Verbose: true}).With("id", "r1").Debug("attempt failed", "status", 404)
	if got, want := b.String(), "llmrun: attempt failed id=r1 status=404\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, Options{Format: FormatJSON})
	l.Info("progress", slog.Group("progress", "done", 4))
	l.Debug("hidden")
	var rec map[string]any
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	if rec["msg"] != "progress" || rec["level"] != "INFO" || rec["time"] == nil || fmt.Sprint(rec["progress"]) != "map[done:4]" {
		t.Errorf("record %v", rec)
	}
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("debug logged without -v: %s", b.String())
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(New(&b, Options{}), slog.LevelInfo)
	fmt.Fprint(w, "llmrun: submitted batch b1\nllmrun: poll")
	fmt.Fprint(w, "ed b1\n")
	if got, want := b.String(), "llmrun: submitted batch b1\nllmrun: polled b1\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]string{"": FormatText, "text": FormatText, "json": FormatJSON} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("yaml"); err == nil {
		t.Error("yaml accepted")
	}
}
