//go:build !unix

package checkpoint

import "os"

// Without Unix locks the lock file only records the pid: two runs on the same
// output are not prevented. (Windows support would use LockFileEx.)

func tryLock(*os.File) error { return nil }

func isLocked(*os.File) (bool, error) { return false, nil }
