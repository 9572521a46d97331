// Package checkpoint makes a run's output file its own checkpoint.
//
// The output file holds one JSON line per succeeded request, each with a
// top-level "custom_id"; the errors file holds one JSON line per failed
// request with the same key. A Store opened on them
//
//   - takes an exclusive lock ("<output>.lock", holding the pid), so a second
//     run on the same output fails fast with a *LockedError naming the holder;
//   - checks the sidecar state file ("<output>.state.json") against the input's
//     fingerprint and the settings that matter, failing with a *MismatchError
//     unless Options.Force is set;
//   - scans the output to learn which ids are done, parsing only "custom_id"
//     (a hand scan of the leading "key":"value" pairs, gjson for the rest),
//     truncates a torn last line with a warning, and stops with a
//     *CorruptError naming the line of a malformed line anywhere else;
//   - rewrites the errors file (temp file + rename) so that it holds only
//     failures that are still failed and, with Options.RetryFailed, none of
//     them, because they will be retried;
//   - appends each new result with one write(2) per line and makes it durable
//     by group commit (see FsyncMode).
//
// A line is written with a single write call, so a kill -9 never tears it: the
// kernel has the whole line or none of it. Only a crash of the machine can
// leave a torn or missing tail, and the next Open repairs that. A failed write
// (disk full) is rolled back by truncating the file to the last complete line.
//
// The package knows nothing of HTTP or providers.
package checkpoint
