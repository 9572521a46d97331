package checkpoint

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKill9LosesNothingAcknowledged runs an appender in a child process,
// SIGKILLs it after a seeded number of acknowledged appends, and checks on
// reopen that every acknowledged id is done, nothing was torn (one write per
// line: the kernel has whole lines only) and no id is there twice. The
// runner-level crash test with the mock lives with the lead's cmd tests.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	if os.Getenv("CHECKPOINT_CRASH_CHILD") != "" {
		crashChild()
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	o, w := testOpts(t)
	rng := rand.New(rand.NewPCG(5, 6))
	acked := map[string]bool{}
	seen := 0 // warnings of the rounds before
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9LosesNothingAcknowledged$")
		cmd.Env = append(os.Environ(), "CHECKPOINT_CRASH_CHILD=1", "CHECKPOINT_OUT="+o.Output, "CHECKPOINT_ERRS="+o.Errors)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		for n := 100 + rng.IntN(2000); n > 0 && sc.Scan(); n-- {
			acked[sc.Text()] = true
		}
		cmd.Process.Kill()
		cmd.Wait()

		s := mustOpen(t, o)
		done, _ := s.Counts()
		for id := range acked {
			if !s.Done(id) {
				t.Fatalf("round %d: %s was acknowledged but is not in the output", round, id)
			}
		}
		mustClose(t, s)
		// A SIGKILL can cut the write it lands in (the kernel may stop a
		// write waiting for memory under load): that last line was never
		// acknowledged, and Open drops it. Anything else is a fault.
		msgs := w.all()[seen:]
		seen += len(msgs)
		if len(msgs) > 1 || (len(msgs) == 1 && !strings.Contains(msgs[0], "torn last line")) {
			t.Fatalf("round %d: a kill -9 tore more than its last write, or duplicated something: %q", round, msgs)
		}
		t.Logf("round %d: %d acknowledged, %d done", round, len(acked), done)
	}
}

// crashChild appends results as fast as it can, printing each id once
// AppendResult has returned, until it is killed.
func crashChild() {
	s, err := Open(Options{Output: os.Getenv("CHECKPOINT_OUT"), Errors: os.Getenv("CHECKPOINT_ERRS")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id := fmt.Sprintf("r%d", i)
		if s.Done(id) {
			continue
		}
		if err := s.AppendResult(id, []byte(result(id))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintln(out, id)
		out.Flush()
	}
}

// TestKill9DuringCompaction kills a process while its Close rewrites an
// output with superseded lines, at seeded moments, and checks that the file
// left is always one from which the rerun reaches the final state: each id
// answered once, for its latest request.
func TestKill9DuringCompaction(t *testing.T) {
	if os.Getenv("CHECKPOINT_COMPACT_CHILD") != "" {
		s, err := Open(Options{Output: os.Getenv("CHECKPOINT_OUT")})
		if err != nil {
			os.Exit(3)
		}
		fmt.Println("open")
		s.Close()
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const n, changed = 60000, 5000
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		s.Answer(id, 1, []byte(result(id)))
	}
	for i := range changed {
		id := fmt.Sprintf("r%d", i*7)
		s.Answer(id, 2, []byte(result(id)))
	}
	// Keep the superseded lines: no Close, which would compact them.
	s.ioMu.Lock()
	s.out.f.Close()
	s.ioMu.Unlock()
	s.unlock()
	template := readFile(t, o.Output)

	rng := rand.New(rand.NewPCG(11, 12))
	for round := range 6 {
		writeFile(t, o.Output, template)
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9DuringCompaction$")
		cmd.Env = append(os.Environ(), "CHECKPOINT_COMPACT_CHILD=1", "CHECKPOINT_OUT="+o.Output)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		bufio.NewReader(stdout).ReadString('\n')                    // opened: Close (the rewrite) runs now
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond) // a seeded moment, before or after the rewrite
		cmd.Process.Kill()
		cmd.Wait()
		compacted := len(readFile(t, o.Output)) < len(template)

		s := mustOpen(t, o)
		for i := range n {
			want := Fingerprint(1)
			if i%7 == 0 && i/7 < changed {
				want = 2
			}
			if v := s.Classify(fmt.Sprintf("r%d", i), want); v != Skip {
				t.Fatalf("round %d: r%d (fp %d) is %v after the kill", round, i, want, v)
			}
		}
		s.InputDone()
		mustClose(t, s)
		if got := strings.Count(readFile(t, o.Output), "\n"); got != n {
			t.Fatalf("round %d: %d lines after the rerun, want %d", round, got, n)
		}
		t.Logf("round %d: the killed rewrite had finished: %v", round, compacted)
	}
}
