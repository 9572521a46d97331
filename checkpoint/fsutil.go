package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// writeFileAtomic replaces path with data: a temp file in the same directory,
// fsync, rename over path, fsync of the directory. A crash leaves either the
// old or the new content, never a mix.
func writeFileAtomic(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if fi, err := os.Stat(path); err == nil {
		tmp.Chmod(fi.Mode().Perm()) // keep the old file's mode; best effort
	} else {
		tmp.Chmod(0o644)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("checkpoint: fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("checkpoint: rename to %s: %w", path, err)
	}
	ok = true
	return syncDir(dir)
}

// syncDir makes a rename or creation in dir durable. Windows cannot open or
// sync a directory; there it is a no-op.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: fsync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("checkpoint: fsync dir %s: %w", dir, err)
	}
	return nil
}
