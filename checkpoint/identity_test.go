package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlySealedSuccessesAnswer (issue 22 item 3): a line llmrun did not
// seal, or a sealed failure record (status 500, an error, a null
// response), answers nothing: Classify sends its request again, a warning
// names the lines, and the answer that follows supersedes them.
func TestOnlySealedSuccessesAnswer(t *testing.T) {
	o, w := testOpts(t)
	failed500 := `{"custom_id":"s500","response":{"status_code":500,"request_id":"","body":null},"error":null,"llmrun":{"attempts":1}}`
	withErr := `{"custom_id":"err","response":{"status_code":200,"request_id":"","body":{}},"error":{"code":"x","message":"y"},"llmrun":{"attempts":1}}`
	nullResp := `{"custom_id":"null","response":null,"error":null,"llmrun":{"attempts":1}}`
	runnerOK := `{"id":"x","custom_id":"ok","response":{"status_code":200,"request_id":"r","body":{"a":1}},"error":null,"llmrun":{"provider":"p","model":"m","attempts":1}}`
	writeFile(t, o.Output, lines(result("plain"), sealed(failed500), sealed(withErr), sealed(nullResp), sealed(runnerOK), sealed(result("good"))))
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]Verdict{"plain": Send, "s500": Send, "err": Send, "null": Send, "ok": Skip, "good": Skip} {
		if got := s.Classify(id, 0); got != want {
			t.Errorf("Classify(%s) = %v, want %v", id, got, want)
		}
	}
	if done, _ := s.Counts(); done != 2 {
		t.Errorf("done = %d, want 2", done)
	}
	if ws := strings.Join(w.all(), "\n"); !strings.Contains(ws, "4 lines that are not answers") || !strings.Contains(ws, `"plain" (line 1)`) {
		t.Errorf("warnings %s", ws)
	}
	if err := s.AppendResult("plain", []byte(result("plain"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Classify("plain", 0) != Skip || s.Classify("s500", 0) != Send {
		t.Fatal("after the answer: plain not answered or s500 answered")
	}
}

// TestLockByIdentity (issue 22 item 6): a symlink alias of a live run's
// output (or of its directory) is the same checkpoint, locked; and a
// compaction through the alias replaces the target, leaving the link a
// link.
func TestLockByIdentity(t *testing.T) {
	o, _ := testOpts(t)
	dir := filepath.Dir(o.Output)
	alias := filepath.Join(dir, "alias.out.jsonl")
	if err := os.Symlink("x.out.jsonl", alias); err != nil {
		t.Fatal(err)
	}
	dirAlias := filepath.Join(t.TempDir(), "d")
	if err := os.Symlink(dir, dirAlias); err != nil {
		t.Fatal(err)
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{alias, filepath.Join(dirAlias, "x.out.jsonl")} {
		o2 := o
		o2.Output, o2.Errors = p, filepath.Join(t.TempDir(), "e.jsonl")
		var le *LockedError
		if s2, err := Open(o2); !errors.As(err, &le) {
			if s2 != nil {
				s2.Close()
			}
			t.Fatalf("Open(%s) while %s is open: %v, want a *LockedError", p, o.Output, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Two answers of one id through the alias: Close compacts.
	o.Output = alias
	s, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Answer("a", 1, []byte(result("a"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer("a", 2, []byte(result("a"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(alias); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the alias is no longer a symlink: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "x.out.jsonl")); strings.Count(got, "\n") != 1 || lineFP([]byte(strings.TrimSpace(got))) != 2 {
		t.Fatalf("target after compaction: %q", got)
	}
}

// TestOutputMustBeRegular (issue 22 item 11): a device as the output is
// refused, and no state or lock file appears beside it.
func TestOutputMustBeRegular(t *testing.T) {
	o, _ := testOpts(t)
	o.Output = os.DevNull
	s, err := Open(o)
	if err == nil {
		s.Close()
		t.Fatal("Open(/dev/null) succeeded")
	}
	if !strings.Contains(err.Error(), "character device") {
		t.Fatalf("error %v", err)
	}
	for _, p := range []string{os.DevNull + ".state.json", os.DevNull + ".lock"} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists", p)
		}
	}
}
