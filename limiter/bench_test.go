package limiter

import (
	"context"
	"sync"
	"testing"
)

// unlimited is "effectively unlimited" rates: every bucket exists (so the
// admission path does all its arithmetic) but never binds.
var unlimited = Limits{RPM: 1e12, ITPM: 1e15, OTPM: 1e15, TPM: 1e15}

var benchCost = Cost{Requests: 1, Input: 135, Output: 256}

// BenchmarkReserveUncontended is one Reserve+Settle pair on one goroutine.
func BenchmarkReserveUncontended(b *testing.B) {
	l := New(Options{Defaults: unlimited})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := l.Reserve(ctx, "k", benchCost)
		if err != nil {
			b.Fatal(err)
		}
		r.Settle(Cost{Requests: 1, Input: 130, Output: 100})
	}
}

// BenchmarkReserveContended is 1,000 goroutines doing Reserve+Settle on one
// key; ns/op is per pair, over all goroutines.
func BenchmarkReserveContended(b *testing.B) {
	const goroutines = 1000
	l := New(Options{Defaults: unlimited})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / goroutines
	extra := b.N % goroutines
	start := make(chan struct{})
	for g := range goroutines {
		n := per
		if g < extra {
			n++
		}
		wg.Go(func() {
			<-start
			for range n {
				r, err := l.Reserve(ctx, "k", benchCost)
				if err != nil {
					b.Error(err)
					return
				}
				r.Settle(Cost{Requests: 1, Input: 130, Output: 100})
			}
		})
	}
	close(start)
	wg.Wait()
}

// BenchmarkReserveContendedConcurrency is the same with a concurrency limit
// of 64, so most goroutines queue and are handed off FIFO.
func BenchmarkReserveContendedConcurrency(b *testing.B) {
	const goroutines = 1000
	lim := unlimited
	lim.Concurrency = 64
	l := New(Options{Defaults: lim})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / goroutines
	extra := b.N % goroutines
	for g := range goroutines {
		n := per
		if g < extra {
			n++
		}
		wg.Go(func() {
			for range n {
				r, err := l.Reserve(ctx, "k", benchCost)
				if err != nil {
					b.Error(err)
					return
				}
				r.Settle(Cost{Requests: 1, Input: 130, Output: 100})
			}
		})
	}
	wg.Wait()
}
