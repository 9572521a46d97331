package cmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/report"
)

// resumeHint is what to run after a stopped run: the same command, except
// after a --max-cost stop, where the same cap would stop again at once.
// There it is the command with the cap raised by what the pending requests
// would cost at this run's mean cost per answer (plus 10%), or, with no
// answer to take a rate from, a plain statement that the cap must be
// raised.
func resumeHint(sum *report.Summary, runErr error, args []string) string {
	var ce *ending.CostCapError
	if !errors.As(runErr, &ce) {
		return "resume with: " + maskArgs(args)
	}
	spent := ce.Spent.USD()
	if sum.RecordedCostUSD != nil {
		spent = *sum.RecordedCostUSD
	}
	if sum.Succeeded == 0 || sum.CostUSD <= 0 || sum.Pending <= 0 {
		return fmt.Sprintf("the spend recorded (%v) has reached --max-cost %v: to continue, raise --max-cost above %v and run the same command",
			pricing.FromUSD(spent), ce.Cap, pricing.FromUSD(spent))
	}
	perAnswer := sum.CostUSD / float64(sum.Succeeded)
	remaining := perAnswer * float64(sum.Pending) * 1.1
	capUSD := math.Ceil((spent+remaining)*100) / 100
	return fmt.Sprintf("resume with (--max-cost raised by %v, what the %d pending requests would cost at this run's %v an answer, plus 10%%): %s",
		pricing.FromUSD(capUSD-ce.Cap.USD()), sum.Pending, pricing.FromUSD(perAnswer), maskArgs(withMaxCost(args, capUSD)))
}

// withMaxCost is args with --max-cost set to usd.
func withMaxCost(args []string, usd float64) []string {
	v := strconv.FormatFloat(usd, 'f', -1, 64)
	out := make([]string, 0, len(args)+2)
	set := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--max-cost" && i+1 < len(args):
			out = append(out, a, v)
			i++
			set = true
		case strings.HasPrefix(a, "--max-cost="):
			out = append(out, "--max-cost="+v)
			set = true
		default:
			out = append(out, a)
		}
	}
	if !set {
		out = append(out, "--max-cost", v)
	}
	return out
}
