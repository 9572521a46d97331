// Package source is llmrun's input: JSONL (a file or stdin, plain, .gz or
// .zst) or CSV rendered through a template, read in a check pass that
// reports every bad line by file and line before anything is sent, then
// streamed to the run as provider requests. It applies the run's model
// choice and model-family rules, and fingerprints each request (canonical
// JSON) so that the checkpoint can tell an answered request from a changed
// one. It knows nothing of limits, attempts or results (package runner).
package source
