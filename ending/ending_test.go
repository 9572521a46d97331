package ending

import (
	"os"
	"syscall"
	"testing"
)

// TestInterruptedSays: the reason names Ctrl-C, not Go's "interrupt".
func TestInterruptedSays(t *testing.T) {
	for sig, want := range map[os.Signal]string{os.Interrupt: "interrupted (Ctrl-C)", syscall.SIGTERM: "interrupted (SIGTERM)"} {
		if got := (&InterruptedError{Signal: sig}).Error(); got != want {
			t.Errorf("%v: %q, want %q", sig, got, want)
		}
	}
}
