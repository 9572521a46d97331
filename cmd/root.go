// Package cmd holds llmrun's cobra commands. A command only parses its
// flags into an options struct and makes one call into package job; every
// error becomes an exit code in one place, ExitCode.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/job"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// Exit codes, documented in --help and the README.
const (
	ExitOK      = 0 // every request succeeded
	ExitFailed  = 1 // some requests failed (they are in the errors file) or were left pending, or an I/O error
	ExitUsage   = 2 // usage or input error: nothing was sent
	ExitAborted = 3 // a fatal provider condition (auth, spend cap, outage) stopped the run; resumable
)

const exitCodesHelp = `Exit codes:
  0    every request succeeded
  1    some requests failed (see the errors file) or were left pending, or an I/O error
  2    usage or input error (bad flag, bad input line, corrupt checkpoint or state file): nothing
       was sent; a corrupt checkpoint names the llmrun repair command that fixes it
  3    aborted by a fatal provider condition (bad key, spend cap, outage longer than --max-outage);
       rerun the same command to resume
  130  interrupted by SIGINT (143: SIGTERM) after draining; rerun the same command to resume`

// IO is where commands read and write, and their environment; tests
// replace it.
type IO = job.IO

// NewRoot builds the command tree.
func NewRoot(io *IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "llmrun",
		Short: "Run batches of LLM requests within provider limits, resumably",
		Long: `llmrun runs JSONL batches of LLM requests (OpenAI batch lines, Anthropic batch lines or
simple {"prompt": ...} lines) against OpenAI, Anthropic and OpenAI-compatible servers. It schedules
against the provider's rate limits instead of tripping them, retries what can succeed, checkpoints
every result as it lands, and resumes where it stopped when rerun.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &job.UsageError{Err: err} })
	root.AddCommand(newBatchCmd(io, nil), newEstimateCmd(io), newMockCmd(io), newStatusCmd(io), newCancelCmd(io), newRepairCmd(io))
	return root
}

// Main runs llmrun with the process's arguments and returns its exit code.
func Main() int {
	log.SetOutput(providers.QuietHTTPLog(os.Stderr)) // net/http quotes a misbehaving server's bytes there
	io := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrIsTerminal: isTerminal(os.Stderr), Getenv: os.Getenv}
	return Execute(context.Background(), io, os.Args[1:])
}

// Execute runs the command line args and maps the outcome to an exit code.
func Execute(ctx context.Context, io *IO, args []string) int {
	root := NewRoot(io)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := ExitCode(err)
	if err != nil && !errors.Is(err, runner.ErrFailures) {
		fmt.Fprintf(io.Err, "llmrun: %v\n", err)
	}
	return code
}

// ExitCode maps an error to llmrun's exit status. It is the only place
// that knows the mapping.
func ExitCode(err error) int {
	var (
		ue  *job.UsageError
		ie  *runner.InputError
		ce  *checkpoint.CorruptError
		le  *checkpoint.LockedError
		se  *checkpoint.StateError
		ae  *runner.AbortError
		sig *runner.InterruptedError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &sig):
		return runner.ExitSignalCode(sig.Signal)
	case errors.As(err, &ae):
		return ExitAborted
	case errors.As(err, &ue), errors.As(err, &ie), errors.As(err, &ce), errors.As(err, &le), errors.As(err, &se):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return 130
	}
	return ExitFailed
}

// finish stamps a run's exit code on its summary, prints the summary line
// (and how to resume a stopped run), writes the --summary file, and
// returns the run's error.
func finish(io *IO, summaryFile string, sum *runner.Summary, runErr error) error {
	if sum == nil {
		return runErr
	}
	sum.ExitCode = ExitCode(runErr)
	fmt.Fprintln(io.Err, sum.OneLine())
	if runErr != nil && sum.ExitCode != ExitFailed && sum.ExitCode != ExitOK {
		fmt.Fprintf(io.Err, "llmrun: resume with: %s\n", resumeCommand())
	}
	if summaryFile != "" {
		if err := sum.WriteFile(summaryFile); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// resumeCommand is the command line that resumes this run: the same one,
// with passwords in URLs (--redis, --base-url) masked.
func resumeCommand() string {
	args := []string{"llmrun"}
	for _, a := range os.Args[1:] {
		if u, err := url.Parse(a); err == nil && u.User != nil {
			a = u.Redacted()
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}
