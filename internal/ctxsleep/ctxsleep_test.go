package ctxsleep

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestForWaitsOrEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !For(t.Context(), time.Minute) {
			t.Fatal("a full wait reported cut short")
		}
		if got := time.Since(start); got != time.Minute {
			t.Fatalf("waited %v, want 1m", got)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if For(ctx, time.Hour) {
			t.Fatal("a wait its context ended reported full")
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("cut after %v, want 1s", got)
		}
		if For(ctx, 0) {
			t.Fatal("a zero wait on an ended context reported full")
		}
		if !For(t.Context(), -time.Second) {
			t.Fatal("a negative wait on a live context reported cut")
		}
	})
}
