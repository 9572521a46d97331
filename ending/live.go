package ending

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
)

// The live run's own reasons to stop, each carried by an AbortError (exit
// 3, resumable): a setup that never worked, a server never reached, first
// attempts that all failed alike, failures past --max-failures, the spend
// cap, a spent day.

// FailFastError stops a run whose first attempts all failed the same way,
// non-retryably: the setup is wrong, and every other request would fail
// alike.
type FailFastError struct {
	Attempts int
	Err      error
}

func (e *FailFastError) Error() string {
	return fmt.Sprintf("the first %d attempts all failed the same way (--fail-fast %d), so every request would: %v", e.Attempts, e.Attempts, e.Err)
}
func (e *FailFastError) Unwrap() error { return e.Err }

// MaxFailures stops a run once its failed requests pass Count or, with
// Ratio set and at least MaxFailuresMinAnswered requests answered, Ratio
// of them (--max-failures). The zero value (On false) never stops a run.
type MaxFailures struct {
	On    bool
	Count int64
	Ratio float64
	// Flag is the option as given, for the message.
	Flag string
}

// MaxFailuresMinAnswered is how many requests must be answered before a
// ratio is judged: one failure of the first request is not 100%.
const MaxFailuresMinAnswered = 20

// Exceeded reports whether failed of answered passes the limit.
func (m MaxFailures) Exceeded(failed, answered int64) bool {
	switch {
	case !m.On:
		return false
	case m.Ratio > 0:
		return answered >= MaxFailuresMinAnswered && float64(failed) > m.Ratio*float64(answered)
	}
	return failed > m.Count
}

// MaxFailuresError stops a run whose failures passed --max-failures.
type MaxFailuresError struct {
	Failed, Answered int64
	Limit            MaxFailures
	// Last is the cause of the latest failure.
	Last string
}

func (e *MaxFailuresError) Error() string {
	s := fmt.Sprintf("%d of %d answered requests failed, past --max-failures %s", e.Failed, e.Answered, e.Limit.Flag)
	if e.Last != "" {
		s += "; the latest: " + e.Last
	}
	return s
}

// SetupError stops a run whose server never answered a request: every
// attempt failed the same way.
type SetupError struct {
	// Where is the provider and base URL.
	Where    string
	Attempts int
	Since    time.Duration
	// Streamed says the failing requests were streamed; Probe is how one
	// of them fared sent plain: ProbeOK, the failure's cause, or "" when
	// not probed.
	Streamed bool
	Probe    string
	Err      *providers.Error
}

func (e *SetupError) Error() string {
	var b strings.Builder
	where := ""
	if e.Where != "" {
		where = " at " + e.Where
	}
	fmt.Fprintf(&b, "nothing has succeeded%s since the run started: %d attempts in %v failed the same way, %s; a setup problem, not an outage",
		where, e.Attempts, e.Since.Round(time.Second), providers.Cause(e.Err))
	if len(e.Err.Body) > 0 && e.Err.Message == "" {
		fmt.Fprintf(&b, " (body %s)", truncate(string(e.Err.Body), 200))
	}
	switch {
	case e.Err.Hint != "":
		b.WriteString("; " + e.Err.Hint)
	case e.Streamed && e.Probe == ProbeOK:
		b.WriteString("; the same request sent plain (not streamed) succeeded: the server (or a gateway before it) cannot stream, rerun with --stream=false")
	case e.Streamed && e.Probe != "":
		b.WriteString("; the same request sent plain failed too (" + e.Probe + "): not a streaming problem")
	case e.Streamed:
		b.WriteString("; the requests were streamed: if the server (or a gateway before it) cannot stream, rerun with --stream=false")
	}
	return b.String()
}

// ProbeOK is SetupError.Probe for a plain request that succeeded.
const ProbeOK = "ok"

func (e *SetupError) Unwrap() error { return e.Err }

// truncate cuts s to n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// UnreachableError stops a run whose server was never reached within
// --connect-deadline.
type UnreachableError struct {
	// Where is the provider and base URL.
	Where    string
	Deadline time.Duration
	Err      error
}

func (e *UnreachableError) Error() string {
	where := ""
	if e.Where != "" {
		where = " " + e.Where
	}
	return fmt.Sprintf("could not reach%s for %v (--connect-deadline), and nothing has succeeded there: %s", where, e.Deadline, providers.Cause(e.Err))
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// DailyLimitError ends a run that reached a daily limit without
// WaitDaily: nothing pending is lost, and the rerun after the reset
// carries on.
type DailyLimitError struct{ Limit *limiter.DayLimitError }

func (e *DailyLimitError) Error() string {
	return e.Limit.Error() + "; rerun the same command after then, or pass --wait-daily to wait for it"
}

func (e *DailyLimitError) Unwrap() error { return e.Limit }

// CostCapError is how a run stopped by --max-cost ends: the spend recorded
// in the output reached the cap, or the next request's worst case would
// have crossed it. It is fatal for the run (exit 3) and resumable with a
// higher cap.
type CostCapError struct {
	Spent, Cap pricing.Cost
}

func (e *CostCapError) Error() string {
	return fmt.Sprintf("spent %v of --max-cost %v; rerun with a higher --max-cost to continue", e.Spent, e.Cap)
}
