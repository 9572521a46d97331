package cmd

import (
	"math"
	"sync"
	"time"
)

// stallMeter measures how long this process went without the CPU while a
// scenario ran, from how late a ticking goroutine wakes. The scenario's
// client and mock share the process (and the machine): on a loaded one a
// request admitted on time waits for a CPU and reaches the server next to
// later ones, so the server, counting arrivals against its own clock,
// sees in some window up to rate × stall more than the client admitted
// in any. 429s within that are the machine's, not the limiter's; on an
// idle machine the stall is 0 and the bound is the scenario's own.
type stallMeter struct {
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	total time.Duration // the lateness of the ticks that came late
	worst time.Duration
}

// stallTick is the meter's step; a tick later than another step counts.
const stallTick = 5 * time.Millisecond

func startStallMeter() *stallMeter {
	m := &stallMeter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(stallTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
			now := time.Now()
			if late := now.Sub(last) - stallTick; late > stallTick {
				m.mu.Lock()
				m.total += late
				m.worst = max(m.worst, late)
				m.mu.Unlock()
			}
			last = now
		}
	}()
	return m
}

// end stops the meter and returns the total stall and the worst one.
func (m *stallMeter) end() (total, worst time.Duration) {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total, m.worst
}

// stallExcess is how many requests a server allowing perSecond can see
// beyond its rate because of stall: perSecond × stall, rounded up.
func stallExcess(perSecond float64, stall time.Duration) int64 {
	return int64(math.Ceil(perSecond * stall.Seconds()))
}

// perSecond is the most requests a second the scenario's server admits.
func (s strictScenario) perSecond() float64 {
	return min(s.rpm, s.itpm/float64(s.inputTokens())) / 60
}

// perSecond is the most requests a second the scenario's server admits.
func (s azureChargeScenario) perSecond() float64 {
	return min(s.rpm, s.tpm/float64(s.perRequest())) / 60
}
