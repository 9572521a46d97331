//go:build linux

package checkpoint

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// On Linux the lock is an open file description lock (F_OFD_SETLK): like
// flock it belongs to the open file, not the process, and unlike flock it can
// be queried without taking it (F_OFD_GETLK), so Status never races a run that
// is starting.

func tryLock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return errWouldBlock
	}
	return err
}

func isLocked(f *os.File) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, fmt.Errorf("checkpoint: query lock: %w", err)
	}
	return lk.Type != unix.F_UNLCK, nil
}
