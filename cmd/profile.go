package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// profileEnv names a directory where Main writes profiles of the whole
// process: cpu.pprof for the run, heap.pprof taken at the largest live
// heap seen (sampled every 200ms), allocs.pprof at the end (every
// allocation of the run), so a real run against a real server
// can be profiled without a debugger. For performance work, not users.
const profileEnv = "LLMRUN_PROFILE_DIR"

// startProfiles starts the profiles profileEnv asks for and returns what
// stops and writes them; a profile that cannot be written is reported and
// the run goes on without it.
func startProfiles(getenv func(string) string, warn func(string)) (stop func()) {
	dir := getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		warn(fmt.Sprintf("%s: %v", profileEnv, err))
		return func() {}
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err == nil {
		err = pprof.StartCPUProfile(cpu)
	}
	if err != nil {
		warn(fmt.Sprintf("%s: cpu profile: %v", profileEnv, err))
		cpu = nil
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		watchHeap(filepath.Join(dir, "heap.pprof"), done, warn)
	}()
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		close(done)
		<-finished
	}
}

// watchHeap writes a heap profile to path each time the live heap passes
// its largest size so far, until done is closed; then memory.txt beside it
// (memoryClasses).
func watchHeap(path string, done <-chan struct{}, warn func(string)) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	classes := newMemoryClasses()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			writeAllocs(filepath.Join(filepath.Dir(path), "allocs.pprof"), warn)
			if err := classes.write(filepath.Join(filepath.Dir(path), "memory.txt")); err != nil {
				warn(fmt.Sprintf("%s: %v", profileEnv, err))
			}
			return
		case <-tick.C:
		}
		classes.sample()
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live <= peak+peak/20 { // 5% more than the last profile
			continue
		}
		peak = live
		f, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			warn(fmt.Sprintf("%s: heap profile: %v", profileEnv, err))
			return
		}
	}
}

// writeAllocs writes the allocations of the whole run (the heap profile's
// alloc_space and alloc_objects at its end) to path: what each request
// allocates, which the peak's heap.pprof, taken early, does not show.
func writeAllocs(path string, warn func(string)) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		warn(fmt.Sprintf("%s: allocs profile: %v", profileEnv, err))
	}
}
