// Package checkpoint makes a run's output file its own checkpoint.
//
// The output file holds one JSON line per answered request, each with a
// top-level "custom_id"; the errors file, beside it, holds one JSON line per
// failed request with the same key. A Store opened on them
//
//   - takes exclusive locks ("<output>.lock", "<errors>.lock", holding the
//     pid), so a second run on the same output or errors file fails fast with
//     a *LockedError naming the holder;
//   - scans both files, validating every line (a line's CRC-32C seal, or JSON
//     validity for a line without one) on a few goroutines, and keeps per id
//     24 bits of its hash and the offset of its latest line in 8 bytes
//     (9.4 to 19 bytes an id), never the ids: a match is confirmed by
//     reading the line's custom_id (and fingerprint) back;
//   - truncates a torn last line with a warning, and stops with a
//     *CorruptError naming the file and line of a malformed line anywhere
//     else (Repair moves such lines aside);
//   - tells the runner, per request, whether the output answers that very
//     request (Classify, by fingerprint), so that a changed request is sent
//     again and an unchanged one is not;
//   - appends each new result with one write(2) per line, sealed and carrying
//     its request's fingerprint, and makes it durable by group commit (see
//     FsyncMode);
//   - at Close rewrites a file that holds superseded lines (an answer to an
//     older version of a request, failure records since answered or of ids
//     that left the input), atomically.
//
// A line is written with a single write call, so a kill -9 never tears it: the
// kernel has the whole line or none of it. Only a crash of the machine can
// leave a torn or missing tail, and the next Open repairs that. A failed write
// (disk full) is rolled back by truncating the file to the last complete line.
//
// The package knows nothing of HTTP or providers.
package checkpoint
