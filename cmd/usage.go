package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/job"
	"github.com/llmrun/llmrun/logging"

	"github.com/llmrun/llmrun/internal/editdist"
)

// flagError is the FlagErrorFunc of every command: a bad flag is a usage
// error (exit 2), and a misspelt one gets the nearest flag's name, as
// cobra gives for misspelt commands.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if plain := plainFlagValueError(msg); plain != msg {
		err = errors.New(plain)
	}
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if near := nearestFlag(c.Flags(), name); near != "" {
			err = fmt.Errorf("%s (did you mean --%s?)", msg, near)
		}
	}
	return &job.UsageError{Err: err}
}

// nearestFlag is the visible flag name closest to name, if one is close
// enough to be a slip: at most two edits, or name is its prefix.
func nearestFlag(fs *pflag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		d := editDistance(name, f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// usageStage tells the errors cobra returns before a command runs
// (unknown command, wrong number of arguments, a missing required flag)
// from the command's own: those are usage errors, exit 2. It also holds
// the root's logging flags, applied once they are parsed.
type usageStage struct {
	running   bool
	io        *IO
	logFormat string
	verbose   bool
	// config is --config.
	config string
}

// hook is the root's PersistentPreRunE: cobra calls it after the flags
// and arguments were accepted. It builds the command's logger.
func (u *usageStage) hook(c *cobra.Command, _ []string) error {
	u.running = true
	if err := useConfig(c, u.config); err != nil {
		return err
	}
	format, err := logging.ParseFormat(u.logFormat)
	if err != nil {
		return &job.UsageError{Err: fmt.Errorf("--log-format: %w", err)}
	}
	u.io.JSONLogs = format == logging.FormatJSON
	u.io.Log = logging.New(u.io.Err, logging.Options{Format: format, Verbose: u.verbose, Timestamps: !u.io.ErrIsTerminal})
	return nil
}

// wrap marks err, returned by c, as a usage error if c never started,
// with c's usage line when its arguments were wrong.
func (u *usageStage) wrap(c *cobra.Command, err error) error {
	var ue *job.UsageError
	if err == nil || u.running || errors.As(err, &ue) {
		return err
	}
	if c != nil && c.HasParent() && !strings.Contains(err.Error(), "\n") {
		err = fmt.Errorf("%w (usage: %s)", err, c.UseLine())
	}
	return &job.UsageError{Err: err}
}

// internalPrefix matches the package prefixes llmrun's packages put on
// their errors ("checkpoint: ", "retry: "): they help a developer, not a
// user, so the printed message drops them.
var internalPrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|: )(checkpoint|retry|limiter|redisbudget|runner|providers|registry|pricing|estimate|job|sse): `)
})

// plainMessage is err as the user reads it: without internal package
// prefixes, and without a path repeated by the operation that failed on
// it ("in.jsonl: open in.jsonl: no such file" reads "in.jsonl: no such
// file").
func plainMessage(err error) string {
	msg := err.Error()
	for {
		next := internalPrefix().ReplaceAllString(msg, "$1")
		if next == msg {
			break
		}
		msg = next
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != "" {
		repeat := pe.Op + " " + pe.Path + ": "
		if i := strings.Index(msg, repeat); i > 0 && strings.Contains(msg[:i], pe.Path) {
			msg = msg[:i] + msg[i+len(repeat):]
		}
	}
	return msg
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int { return editdist.Distance(a, b) }
