package checkpoint

import (
	"fmt"
	"strings"
)

// FsyncMode says when appended lines are fsynced. The zero value is FsyncBatch.
type FsyncMode int

const (
	// FsyncBatch is group commit: a line is fsynced at most Options.SyncInterval
	// (default 50ms) after it was written, or as soon as Options.SyncLines
	// (default 1024) lines are waiting, whichever comes first. A crash of the
	// process loses nothing that was appended (every line is already in the
	// kernel); a crash of the machine loses at most that window.
	FsyncBatch FsyncMode = iota
	// FsyncAlways fsyncs after every line.
	FsyncAlways
	// FsyncNever leaves flushing to the operating system, also on Flush and
	// Close. The sidecar state file is still written durably.
	FsyncNever
)

// fsyncNames are the flag spellings of the modes, by FsyncMode: String
// writes them and ParseFsyncMode reads them. A read-only table.
var fsyncNames = [...]string{FsyncBatch: "batch", FsyncAlways: "always", FsyncNever: "never"}

// String returns the flag spelling of m: "batch", "always" or "never".
func (m FsyncMode) String() string {
	if m >= 0 && int(m) < len(fsyncNames) {
		return fsyncNames[m]
	}
	return fmt.Sprintf("FsyncMode(%d)", int(m))
}

// ParseFsyncMode parses a --fsync flag value: "batch" (or ""), "always" or
// "never", case-insensitively.
func ParseFsyncMode(s string) (FsyncMode, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "" {
		return FsyncBatch, nil
	}
	for m, n := range fsyncNames {
		if name == n {
			return FsyncMode(m), nil
		}
	}
	return 0, fmt.Errorf("checkpoint: unknown fsync mode %q (want batch, always or never)", s)
}
