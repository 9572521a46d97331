package report

import (
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// DayLimits is one key's day in the summary.
type DayLimits struct {
	Key string `json:"key"`
	// Requests and Tokens are what the key used of its own day; RPD and
	// TPD the per-day limits in force (its own or, lower, the
	// provider's), 0 for none.
	Requests float64 `json:"requests"`
	Tokens   float64 `json:"tokens"`
	RPD      float64 `json:"rpd"`
	TPD      float64 `json:"tpd"`
	// Reset ends the day counted; RefusedUntil, when set, is when the
	// provider's refusal for the day lifts.
	Reset        time.Time `json:"reset"`
	RefusedUntil time.Time `json:"refused_until,omitzero"`
}

// DaysOf lists the keys with a day limit or a refusal (nil days: none).
func DaysOf(days *limiter.Days) []DayLimits {
	if days == nil {
		return nil
	}
	var out []DayLimits
	for _, st := range days.Stats() {
		out = append(out, DayLimits{Key: st.Key, Requests: st.Requests, Tokens: st.Tokens, RPD: st.RPD, TPD: st.TPD, Reset: st.Reset, RefusedUntil: st.Blocked})
	}
	return out
}
