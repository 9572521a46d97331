package checkpoint

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
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
		if msgs := w.all(); len(msgs) != 0 {
			t.Fatalf("round %d: a kill -9 tore or duplicated something: %q", round, msgs)
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
