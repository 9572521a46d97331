package cache

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter/redisbudget/redistest"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchHits measures a hit as the runner makes it: the key of a ~1 KB
// request body, then Lookup of a ~1 KB answer, over 1000 distinct
// entries. Run with -benchtime=100000x for the README's figures; cpu-ns/hit
// is the process's CPU time per hit (user + system).
func benchHits(b *testing.B, c Cache) {
	ctx := context.Background()
	const n = 1000
	bodies := make([][]byte, n)
	for i := range n {
		bodies[i] = fmt.Appendf(nil, `{"model":"m1","messages":[{"role":"user","content":"eval item %d %0900d"}]}`, i, 0)
		k := KeyOf("/v1/chat/completions", "m1", bodies[i])
		_, e := entryFor(i, 1000)
		if err := c.Put(ctx, k, e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := range b.N {
		k := KeyOf("/v1/chat/completions", "m1", bodies[i%n])
		if _, ok, err := Lookup(ctx, c, k, "/v1/chat/completions", "m1"); !ok || err != nil {
			b.Fatalf("miss: %v", err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/hit")
}

func BenchmarkDirHit(b *testing.B) {
	d, err := OpenDir(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchHits(b, d)
}

func BenchmarkRedisHit(b *testing.B) {
	addr := redistest.StartOrSkip(b)
	r, err := OpenRedis("redis://"+addr+"/0", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	benchHits(b, r)
}
