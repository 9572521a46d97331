package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fingerprintSpan is how many bytes of the head and of the tail of the input
// Fingerprint hashes.
const fingerprintSpan = 64 << 10

// fingerprintScheme prefixes every fingerprint, so that a later scheme is never
// compared with this one.
const fingerprintScheme = "v1:"

// InputInfo identifies the input file a checkpoint was made from.
type InputInfo struct {
	// Path is the absolute path of the input. It is recorded, not compared:
	// moving an input does not change it.
	Path string `json:"path"`
	// Size is the input's length in bytes.
	Size int64 `json:"size"`
	// ModTime is recorded for the user's information, not compared: copying or
	// touching a file changes it while the content stays the same.
	ModTime time.Time `json:"mtime"`
	// Fingerprint is "v1:" followed by the hex SHA-256 of the size (8 bytes,
	// big endian), the first 64 KiB and the last 64 KiB of the file (the whole
	// file if it is at most 128 KiB). Empty means unknown (stdin): not checked.
	Fingerprint string `json:"fingerprint"`
}

// Fingerprint computes the InputInfo of the file at path. It reads at most
// 128 KiB whatever the file's size, so it costs well under a millisecond.
//
// It catches every change of size and every edit within 64 KiB of either end,
// which covers regenerated, appended and truncated inputs; an edit of the same
// length deep in the middle of a large file goes unnoticed (ids are still the
// key, so such a resume is still exact for the ids that did not change).
func Fingerprint(path string) (InputInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return InputInfo{}, fmt.Errorf("checkpoint: fingerprint: %w", err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return InputInfo{}, fmt.Errorf("checkpoint: fingerprint: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return InputInfo{}, fmt.Errorf("checkpoint: fingerprint: %w", err)
	}
	size := fi.Size()
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(size))
	h.Write(n[:])
	if size <= 2*fingerprintSpan {
		_, err = io.Copy(h, f)
	} else {
		_, err = io.Copy(h, io.NewSectionReader(f, 0, fingerprintSpan))
		if err == nil {
			_, err = io.Copy(h, io.NewSectionReader(f, size-fingerprintSpan, fingerprintSpan))
		}
	}
	if err != nil {
		return InputInfo{}, fmt.Errorf("checkpoint: fingerprint %s: %w", path, err)
	}
	return InputInfo{
		Path:        abs,
		Size:        size,
		ModTime:     fi.ModTime().UTC(),
		Fingerprint: fingerprintScheme + hex.EncodeToString(h.Sum(nil)),
	}, nil
}

// inputDiffs describes how cur differs from the recorded input; nil if it
// does not or if either side is unknown.
func inputDiffs(rec *InputInfo, cur InputInfo) []string {
	if rec == nil || rec.Fingerprint == "" || cur.Fingerprint == "" {
		return nil
	}
	if !strings.HasPrefix(rec.Fingerprint, fingerprintScheme) {
		return nil // made by another scheme: cannot compare
	}
	var d []string
	if rec.Size != cur.Size {
		d = append(d, fmt.Sprintf("input size %d → %d bytes", rec.Size, cur.Size))
	} else if rec.Fingerprint != cur.Fingerprint {
		d = append(d, "input content changed (same size, different fingerprint)")
	}
	return d
}
