// Package forecast says, before anything is sent, what a run of the
// pending requests would take: tokens (tokenized locally, or calibrated by
// the provider's own count of a sample), money on the live and the
// batch-API route, and wall time under the limits given; and what an
// output already records (ReadRecorded: answered ids, spend, answer
// lengths), which the estimate, status and --max-cost read.
//
// It is apart from package runner, which is only the live run, and from
// package estimate (token estimation), which must stay free of providers
// and limiter: a forecast needs both, and the source, prices and cache.
package forecast
