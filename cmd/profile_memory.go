package cmd

import (
	"fmt"
	"os"
	"runtime/metrics"
	"strings"
)

// memoryClasses keeps the Go runtime's memory classes at the sample where
// the memory it holds from the OS (all classes but the released heap) was
// largest, so a profiled run shows where its peak went: heap objects, the
// heap's free and unused spans, goroutine stacks, runtime metadata. Memory
// outside the runtime (the checkpoint index's mapping, the binary's pages)
// is not among them: the difference from the peak RSS is that.
type memoryClasses struct {
	samples []metrics.Sample
	peak    []uint64
	held    uint64
}

func newMemoryClasses() *memoryClasses {
	m := &memoryClasses{}
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") {
			m.samples = append(m.samples, metrics.Sample{Name: d.Name})
		}
	}
	m.peak = make([]uint64, len(m.samples))
	return m
}

// sample reads the classes and keeps them if the runtime holds more than
// at any sample before.
func (m *memoryClasses) sample() {
	metrics.Read(m.samples)
	var total, released uint64
	for _, s := range m.samples {
		switch s.Name {
		case "/memory/classes/total:bytes":
			total = s.Value.Uint64()
		case "/memory/classes/heap/released:bytes":
			released = s.Value.Uint64()
		}
	}
	if total-released <= m.held {
		return
	}
	m.held = total - released
	for i, s := range m.samples {
		m.peak[i] = s.Value.Uint64()
	}
}

// write writes the peak's classes to path, one "name MiB" a line. Unlike
// the run's files (owner-only: they carry request data) it is 0644, as the
// pprof files beside it are: memory figures only, a debugging aid to hand on.
func (m *memoryClasses) write(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "held from the OS at its peak (total - heap/released): %.1f MiB\n", float64(m.held)/(1<<20))
	for i, s := range m.samples {
		fmt.Fprintf(&b, "%s %.1f MiB\n", s.Name, float64(m.peak[i])/(1<<20))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
