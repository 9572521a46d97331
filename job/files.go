package job

import (
	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/internal/outfile"
)

// checkpointRoles are the files a checkpoint keeps for output and its
// errors file, named as a user would find them: none of them may be another
// file the command writes.
func checkpointRoles(output, errorsFile string) []outfile.Role {
	return []outfile.Role{
		{Flag: "-o", Path: output},
		{Flag: "the output's state file", Path: checkpoint.StatePath(output)},
		{Flag: "the output's lock file", Path: checkpoint.LockPath(output)},
		{Flag: "--errors", Path: errorsFile},
		{Flag: "the errors file's lock file", Path: checkpoint.LockPath(errorsFile)},
	}
}

// checkFiles refuses, before anything is read or sent, a run whose files
// clash: a file it writes that is the input or another of its files (the
// summary over the output replaced paid answers), or a checkpoint file that
// is not a regular file (-o /dev/null would leave a state file in /dev).
// Files are compared by identity: a symlink or a hard link is its target.
func (o *BatchOptions) checkFiles() error {
	for _, r := range []outfile.Role{{Flag: "-o", Path: o.Output}, {Flag: "--errors", Path: o.Errors}} {
		if err := outfile.RequireRegular(r.Path); err != nil {
			return usagef("%s: %v: the output is the checkpoint, read back and appended to; name a regular file", r.Flag, err)
		}
	}
	reads := []outfile.Role{{Flag: "the input", Path: o.Input}}
	writes := append(checkpointRoles(o.Output, o.Errors),
		outfile.Role{Flag: "--summary", Path: o.Summary},
		outfile.Role{Flag: "--metrics-file", Path: o.Metrics.File})
	if err := outfile.Distinct(reads, writes); err != nil {
		return usage(err)
	}
	return nil
}
