//go:build unix && !linux

package checkpoint

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Elsewhere on Unix the lock is flock(2). It cannot be queried without taking
// it, so isLocked probes with a shared lock for an instant; a run starting in
// that instant fails with a *LockedError and can simply be rerun.

func tryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errWouldBlock
	}
	return err
}

func isLocked(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
