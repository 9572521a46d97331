package job

import (
	"github.com/llmrun/llmrun/limiter"
)

// DailyOptions are the daily budgets of a run.
type DailyOptions struct {
	// RPD and TPD are the requests and tokens (input and output) a key
	// may use per calendar day of its provider's zone; 0 sets none (the
	// provider's own daily signals are still obeyed).
	RPD, TPD float64
	// WaitDaily sleeps until a spent day resets instead of stopping the
	// run (exit 3).
	WaitDaily bool
}

// days are the run's per-day budgets, counted by io's clock.
func (o DailyOptions) days(io *IO) *limiter.Days {
	return limiter.NewDays(limiter.DaysOptions{Defaults: limiter.DayLimits{Requests: o.RPD, Tokens: o.TPD}, Now: io.Now})
}
