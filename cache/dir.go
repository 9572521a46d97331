package cache

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"
)

// Dir is a content-addressed directory of answers, one file per key:
// root/v1/ab/cdef… (the key's hex). Each file is written whole to
// root/tmp and renamed into place, so a reader sees the old file, the new
// one or none, never half of one; several processes may read and write
// the same directory at once with no lock (two writers of one key both
// write a complete answer, and the last rename wins). A header with the
// payload's length and CRC-32C guards against what rename cannot (a torn
// or damaged file after a crash of the machine): such a file is a miss,
// and removed.
//
// A hit sets the file's modification time (at most once a minute), so
// the times order the entries by last use, and Prune evicts the least
// recently used first.
type Dir struct {
	root     string
	maxBytes int64
	now      func() time.Time
	corrupt  atomic.Int64
}

// Header: magic, version, CRC-32C of the payload, payload length.
const (
	dirMagic   = "LLMC"
	dirVersion = 1
	headerLen  = 4 + 1 + 4 + 4
	// touchEvery is how stale a hit's access time may get before a hit
	// writes it again: LRU at minute resolution costs a syscall a minute.
	touchEvery = time.Minute
	// staleTemp is the age after which Prune removes a temp file (left by
	// a writer that died before its rename).
	staleTemp = time.Hour
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenDir opens (making it if missing) the directory cache at root.
func OpenDir(root string, o Options) (*Dir, error) {
	for _, d := range []string{filepath.Join(root, "v1"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Dir{root: root, maxBytes: o.MaxBytes, now: now}, nil
}

func (d *Dir) path(k Key) string {
	h := k.String()
	return filepath.Join(d.root, "v1", h[:2], h[2:])
}

// Get reads k's file and checks its header.
func (d *Dir) Get(_ context.Context, k Key) (*Entry, bool, error) {
	p := d.path(k)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	e, err := decode(b)
	if err != nil {
		d.corrupt.Add(1)
		os.Remove(p) // a rename may have replaced it meanwhile: then this loses one good entry, never serves a bad one
		return nil, false, nil
	}
	if now := d.now(); now.Sub(st.ModTime()) > touchEvery {
		os.Chtimes(p, now, now) // best effort: a missed touch only ages the entry
	}
	return e, true, nil
}

// Put writes e to a temp file and renames it over k's.
func (d *Dir) Put(_ context.Context, k Key, e *Entry) error {
	b, err := encode(e)
	if err != nil {
		return err
	}
	p := d.path(k)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	f, err := os.CreateTemp(filepath.Join(d.root, "tmp"), "put-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		now := d.now()
		// The access time LRU orders by: the clock's, not the file system's.
		werr = os.Chtimes(tmp, now, now)
	}
	if werr == nil {
		werr = os.Rename(tmp, p)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("cache: %w", werr)
	}
	return nil
}

// encode is the header followed by e as JSON.
func encode(e *Entry) ([]byte, error) {
	payload, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	b := make([]byte, headerLen, headerLen+len(payload))
	copy(b, dirMagic)
	b[4] = dirVersion
	binary.BigEndian.PutUint32(b[5:], crc32.Checksum(payload, castagnoli))
	binary.BigEndian.PutUint32(b[9:], uint32(len(payload)))
	return append(b, payload...), nil
}

// decode checks the header and parses the entry.
func decode(b []byte) (*Entry, error) {
	if len(b) < headerLen || string(b[:4]) != dirMagic || b[4] != dirVersion {
		return nil, errors.New("cache: bad header")
	}
	payload := b[headerLen:]
	if int(binary.BigEndian.Uint32(b[9:])) != len(payload) {
		return nil, errors.New("cache: truncated entry")
	}
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(b[5:]) {
		return nil, errors.New("cache: checksum mismatch")
	}
	e := new(Entry)
	if err := json.Unmarshal(payload, e); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return e, nil
}

// file is one entry as Prune and Stats see it.
type file struct {
	path string
	size int64
	used time.Time
}

// scan lists the entries.
func (d *Dir) scan() ([]file, error) {
	var out []file
	err := filepath.WalkDir(filepath.Join(d.root, "v1"), func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed by another process meanwhile
			}
			return err
		}
		if de.IsDir() {
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		out = append(out, file{path: p, size: info.Size(), used: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return out, nil
}

// Stats counts the entries and their bytes.
func (d *Dir) Stats(context.Context) (Stats, error) {
	files, err := d.scan()
	st := Stats{Backend: "dir", Where: d.root, MaxBytes: d.maxBytes, Corrupt: d.corrupt.Load()}
	for _, f := range files {
		st.Entries++
		st.Bytes += f.size
	}
	return st, err
}

// Prune removes stale temp files, then the least recently used entries
// until the rest fit in maxBytes (0: the bound it was opened with; no
// bound: none).
func (d *Dir) Prune(_ context.Context, maxBytes int64) (Pruned, error) {
	if maxBytes <= 0 {
		maxBytes = d.maxBytes
	}
	d.pruneTemps()
	files, err := d.scan()
	if err != nil {
		return Pruned{}, err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	var pr Pruned
	if maxBytes > 0 && total > maxBytes {
		sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
		for _, f := range files {
			if total <= maxBytes {
				break
			}
			if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return pr, fmt.Errorf("cache: %w", err)
			}
			total -= f.size
			pr.Entries++
			pr.Bytes += f.size
		}
	}
	pr.Left = total
	return pr, nil
}

// pruneTemps removes temp files older than staleTemp: a writer that
// still runs renames its file within moments.
func (d *Dir) pruneTemps() {
	des, _ := os.ReadDir(filepath.Join(d.root, "tmp"))
	for _, de := range des {
		if info, err := de.Info(); err == nil && d.now().Sub(info.ModTime()) > staleTemp {
			os.Remove(filepath.Join(d.root, "tmp", de.Name()))
		}
	}
}

// Clear removes every entry.
func (d *Dir) Clear(context.Context) (int64, error) {
	files, err := d.scan()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, f := range files {
		if err := os.Remove(f.path); err == nil {
			n++
		}
	}
	return n, nil
}

// Close releases nothing: the directory holds no open state.
func (d *Dir) Close() error { return nil }
