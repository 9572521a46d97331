//go:build unix

package redisbudget

import (
	"errors"
	"syscall"
)

// processAlive asks the kernel with signal 0: ESRCH means no such process;
// EPERM means one exists that we may not signal.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}
