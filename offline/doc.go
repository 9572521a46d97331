// Package offline is llmrun's batch-API route: the same input, output and
// errors files as the live run (package runner), but the requests go to
// the provider's batch API, recorded in the checkpoint's state before they
// are polled so that a rerun collects them instead of paying twice. It
// shares the run's output lines, counters and summary; runner never
// imports it.
package offline
