package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// passes runs Check then Each over src and returns the count and the ids.
func passes(t *testing.T, src *Source) (int, []string) {
	t.Helper()
	res, err := src.Check()
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	var ids []string
	if err := src.Each(func(r *providers.Request) error { ids = append(ids, r.ID); return nil }); err != nil {
		t.Fatalf("Each: %v", err)
	}
	return res.Requests, ids
}

func simpleLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"r%d","prompt":"p%d"}`+"\n", i, i)
	}
	return b.String()
}

// Non-seekable inputs are spooled, so the run sees what the check saw; the
// spool leaves no file behind.
func TestSourceNonSeekableInputsReadTwice(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	const n = 5
	want := "r0,r1,r2,r3,r4"
	check := func(t *testing.T, src *Source, spoolDir string) {
		t.Helper()
		defer src.Close()
		total, ids := passes(t, src)
		if total != n || strings.Join(ids, ",") != want {
			t.Fatalf("check counted %d, run saw %v; want %d and %s", total, ids, n, want)
		}
		// A third pass (the offline route's, say) sees the same.
		if line, n, err := src.firstLine(); err != nil || n != 1 || !strings.Contains(string(line), `"r0"`) {
			t.Errorf("firstLine = %s, %d, %v", line, n, err)
		}
		if ents, _ := os.ReadDir(spoolDir); len(ents) != 0 {
			t.Errorf("spool left a name in %s: %v", spoolDir, ents)
		}
	}
	t.Run("standard input", func(t *testing.T) {
		dir := t.TempDir()
		check(t, &Source{Path: "-", Parser: p, Stdin: strings.NewReader(simpleLines(n)), SpoolDir: dir}, dir)
	})
	t.Run("pipe by /dev/fd path", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		go func() { w.WriteString(simpleLines(n)); w.Close() }()
		dir := t.TempDir()
		check(t, &Source{Path: fmt.Sprintf("/dev/fd/%d", r.Fd()), Parser: p, SpoolDir: dir}, dir)
	})
	t.Run("named FIFO", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "in.jsonl")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			w.WriteString(simpleLines(n))
			w.Close()
		}()
		stop := make(chan struct{})
		defer close(stop)
		go unblockFIFO(fifo, 30*time.Second, stop)
		dir := t.TempDir()
		check(t, &Source{Path: fifo, Parser: p, SpoolDir: dir}, dir)
	})
	t.Run("standard input redirected from a file is read in place", func(t *testing.T) {
		path := writeInput(t, strings.Split(strings.TrimSpace(simpleLines(n)), "\n")...)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dir := t.TempDir()
		src := &Source{Path: "-", Parser: p, Stdin: f, SpoolDir: dir}
		check(t, src, dir)
		if src.Spooled() {
			t.Error("a regular file was spooled")
		}
	})
}

func TestSourceRefusesWhatCannotBeRead(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		_, err := (&Source{Path: dir, Parser: p}).Check()
		if err == nil || !strings.Contains(err.Error(), "directory") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("spool directory missing", func(t *testing.T) {
		src := &Source{Path: "-", Parser: p, Stdin: strings.NewReader(simpleLines(1)), SpoolDir: filepath.Join(t.TempDir(), "nope")}
		err := src.Open()
		var ie *InputError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "spool") {
			t.Fatalf("err = %v, want an input error about the spool", err)
		}
	})
}

// unblockFIFO guards a test against a reader that opens a FIFO again and
// would wait for a writer forever: after d it keeps opening and closing the
// FIFO for writing (each such reader then sees an empty input) until stop.
func unblockFIFO(fifo string, d time.Duration, stop <-chan struct{}) {
	select {
	case <-stop:
		return
	case <-time.After(d):
	}
	for {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	bad := "{\"custom_id\":\"a\",\"prompt\":\"caf\xe9 au lait\"}"
	t.Run("rejected naming the byte", func(t *testing.T) {
		p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
		_, err := p.Parse([]byte(bad), 1)
		if err == nil || !strings.Contains(err.Error(), "invalid UTF-8 at byte 31") || !strings.Contains(err.Error(), "--lossy-utf8") {
			t.Fatalf("err = %v", err)
		}
		// Also inside a body passed through untouched.
		_, err = p.Parse([]byte("{\"body\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}}"), 1)
		if err == nil || !strings.Contains(err.Error(), "invalid UTF-8") {
			t.Fatalf("body: err = %v", err)
		}
		path := writeInput(t, `{"prompt":"ok"}`, bad)
		_, err = (&Source{Path: path, Parser: p}).Check()
		if err == nil || !strings.Contains(err.Error(), path+":2: invalid UTF-8") {
			t.Fatalf("check: err = %v", err)
		}
	})
	t.Run("lossy replaces and counts", func(t *testing.T) {
		p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}, LossyUTF8: true}
		path := writeInput(t, `{"prompt":"ok"}`, bad, "{\"prompt\":\"\xc3\x28 and \xff\"}", `{"prompt":"fine"}`)
		src := &Source{Path: path, Parser: p}
		res, err := src.Check()
		if err != nil || res.Requests != 4 || res.LossyLines != 2 || res.LossyFirst != 2 {
			t.Fatalf("res = %+v, err = %v; want 4 requests, 2 lossy lines, first 2", res, err)
		}
		var prompts []string
		src.Each(func(r *providers.Request) error {
			prompts = append(prompts, gjson.GetBytes(r.Body, "messages.0.content").Str)
			return nil
		})
		if len(prompts) != 4 || prompts[1] != "caf\uFFFD au lait" || prompts[2] != "\uFFFD( and \uFFFD" {
			t.Fatalf("prompts %q", prompts)
		}
	})
}
