// Package report is what a run tells while it runs and when it ends: the
// live figures both routes count into (Counters, with the spend by model),
// progress (a progressbar/v3 bar on a terminal, log lines or JSON records
// off it) and the summary (one line for logs, a block for a terminal,
// JSON for --summary).
//
// It is its own package so that the live run (package runner) and the
// batch-API route (package offline) report alike without either owning the
// words, and so that a change of wording never touches the run. It knows
// nothing of either route: what it needs of a run is the Counters they
// update, the budget's and the days' stats (KeyLimitsOf, DaysOf), a tag
// book and a status word for the progress line; runner imports report,
// never the reverse.
package report
