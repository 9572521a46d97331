//go:build linux

package cmd

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// trimInterval is how often a long run hands back the executable's cold
// pages (see trimExecutable).
const trimInterval = 10 * time.Second

// keepTrimmed hands back the executable's cold pages now and then every
// trimInterval until the process ends: one goroutine, a few milliseconds
// of CPU a time.
func keepTrimmed() {
	trimExecutable()
	go func() {
		for range time.Tick(trimInterval) {
			trimExecutable()
		}
	}()
}

// trimExecutable tells the kernel that the executable's read-only pages
// (its code, read-only data and function tables) need not stay in this
// process's memory. The start of a run touches megabytes of them once
// (package initialisers, flag parsing, the input check) that the run never
// needs again, and they would stay resident, counted in its memory, for the
// whole run: about 30 of a 64 MB binary, of which the run's steady state
// uses about a third. The pages are the file's own, unmodified
// (a mapping with private changes is left alone), so a page needed again
// comes back from the page cache on its next touch, without a disk read.
func trimExecutable() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	defer f.Close()
	var start, end uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if m, ok := exeMapping(line, exe); ok {
			start, end = m[0], m[1]
			continue
		}
		if start == 0 || !bytes.HasPrefix(line, []byte("Anonymous:")) {
			continue
		}
		if bytes.Equal(bytes.Fields(line)[1], []byte("0")) {
			unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
		}
		start = 0
	}
}

// exeMapping parses an smaps header line: the range of a read-only (not
// writable) mapping of the file exe, or false for any other line.
func exeMapping(line []byte, exe string) ([2]uint64, bool) {
	f := bytes.Fields(line)
	if len(f) < 6 || len(f[1]) < 2 || f[1][1] != '-' || string(f[5]) != exe {
		return [2]uint64{}, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return [2]uint64{}, false
	}
	a, err1 := strconv.ParseUint(string(lo), 16, 64)
	b, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || a >= b {
		return [2]uint64{}, false
	}
	return [2]uint64{a, b}, true
}
