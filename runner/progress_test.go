package runner

import (
	"testing"
	"time"
)

func TestRateETA(t *testing.T) {
	c := new(Counters)
	c.Total.Store(100)
	if got := rateETA(c, 10*time.Second); got != "elapsed=10s" {
		t.Errorf("nothing answered: %q", got)
	}
	c.Skipped.Store(20)
	c.Succeeded.Store(15)
	c.Failed.Store(5)
	// 20 answered in 10s = 2/s; 60 left → 30s.
	if got := rateETA(c, 10*time.Second); got != "elapsed=10s rate=2.0/s eta=30s" {
		t.Errorf("got %q", got)
	}
}
