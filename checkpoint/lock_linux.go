//go:build linux

package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// On Linux the lock is an open file description lock (F_OFD_SETLK): like
// flock it belongs to the open file, not the process, and unlike flock it can
// be queried without taking it (F_OFD_GETLK), so Status never races a run that
// is starting. The syscall package lacks the constants; their values are the
// same on every Linux architecture (asm-generic/fcntl.h).
const (
	fOFDGetlk = 36
	fOFDSetlk = 37
)

func tryLock(f *os.File) error {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	err := syscall.FcntlFlock(f.Fd(), fOFDSetlk, &lk)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
		return errWouldBlock
	}
	return err
}

func isLocked(f *os.File) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), fOFDGetlk, &lk); err != nil {
		return false, fmt.Errorf("checkpoint: query lock: %w", err)
	}
	return lk.Type != syscall.F_UNLCK, nil
}
