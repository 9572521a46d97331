package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// errWouldBlock is what the platform's tryLock returns when another open file
// holds the lock.
var errWouldBlock = errors.New("lock held elsewhere")

// fileLock is an exclusive advisory lock on "<output>.lock", which holds the
// holder's pid. Release removes the file while still holding the lock; acquire
// re-checks after locking that the file it locked is still the one at the path,
// so removal never lets two holders in.
type fileLock struct {
	f    *os.File
	path string
}

func acquireLock(output string) (*fileLock, error) {
	path := LockPath(output)
	for range 16 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: lock: %w", err)
		}
		if err := tryLock(f); err != nil {
			pid := readPID(f)
			f.Close()
			if errors.Is(err, errWouldBlock) {
				return nil, &LockedError{Output: output, Lock: path, PID: pid}
			}
			return nil, fmt.Errorf("checkpoint: lock %s: %w", path, err)
		}
		locked, err1 := f.Stat()
		named, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(locked, named) {
			f.Close() // the previous holder removed it; lock the new one
			continue
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("checkpoint: lock %s: %w", path, err)
		}
		if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
			f.Close()
			return nil, fmt.Errorf("checkpoint: lock %s: %w", path, err)
		}
		return &fileLock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("checkpoint: lock %s keeps being replaced", path)
}

// release removes the lock file, then closes it, which drops the lock.
func (l *fileLock) release() error {
	err := os.Remove(l.path)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint: unlock: %w", err)
	}
	return nil
}

// lockHolder reports whether a live process holds the lock on output, and its
// pid if it wrote one. It does not take the lock where the platform can tell
// without (Linux: open file description locks).
func lockHolder(output string) (held bool, pid int, err error) {
	f, err := openExisting(LockPath(output), "lock")
	if f == nil {
		return false, 0, err
	}
	defer f.Close()
	held, err = isLocked(f)
	if err != nil || !held {
		return false, 0, err
	}
	return true, readPID(f), nil
}

func readPID(f *os.File) int {
	var b [32]byte
	n, _ := f.ReadAt(b[:], 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}
