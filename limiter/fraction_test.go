package limiter

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestRPMUnderOnePaces (issue 22 item 8): --rpm 0.5 admits one request
// every two minutes instead of refusing every request as larger than the
// limit.
func TestRPMUnderOnePaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{RPM: 0.5, Headroom: 1}})
		mustReserve(t, l, "k", Cost{Requests: 1})
		ch := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		time.Sleep(119 * time.Second)
		pending(t, ch, "at 119s")
		time.Sleep(time.Second)
		done(t, ch, "at 120s")
	})
}
