// Package cmd holds llmrun's cobra commands. A command only parses its
// flags into an options struct and makes one call into package job; every
// error becomes an exit code in one place, ExitCode.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/job"
	"github.com/llmrun/llmrun/logging"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/source"
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
  3    aborted by a fatal provider condition (bad key, spend cap, outage longer than --max-outage,
       a server never reached within --connect-deadline), by a daily limit (--rpd, --tpd or the
       provider's), by --fail-fast, --max-failures or --max-cost; rerun the same command to resume
  130  interrupted by SIGINT (143: SIGTERM) after draining; rerun the same command to resume`

// IO is where commands read and write, and their environment; tests
// replace it.
type IO = job.IO

// NewRoot builds the command tree.
func NewRoot(io *IO) *cobra.Command {
	root, _ := newRoot(io)
	return root
}

// newRoot builds the command tree and the stage that tells usage errors
// (before any command ran) from the others.
func newRoot(io *IO) (*cobra.Command, *usageStage) {
	stage := &usageStage{}
	root := &cobra.Command{
		Use:   "llmrun",
		Short: "Run batches of LLM requests within provider limits, resumably",
		Long: `llmrun runs JSONL batches of LLM requests (OpenAI batch lines, Anthropic batch lines, simple
{"prompt": ...} lines, or CSV rows through --template) against OpenAI (Chat Completions, Responses,
embeddings), Anthropic, Azure OpenAI, Gemini and OpenAI-compatible servers, live or through the
providers' batch APIs at half price. It schedules against the providers' limits instead of tripping
them: a concurrency cap and per-minute request and token buckets, given or learned from rate-limit
headers (from 429s where no headers describe a key), per-day budgets, a warm-up against
acceleration limits, and reservations that follow what the server's token counter is seen to
charge; --redis shares one budget between processes. A body its model's family refuses is
rewritten to an equivalent one, or refused with the fix, before anything is sent. llmrun retries
what can succeed, stops at --max-cost, checkpoints every result as it lands, and resumes where it
stopped when rerun; --cache answers repeated requests from earlier runs. "llmrun mock" serves a
mock of every one of these dialects for trying it all without a key.

` + exitCodesHelp,
		SilenceUsage:               true,
		SilenceErrors:              true,
		PersistentPreRunE:          stage.hook,
		SuggestionsMinimumDistance: 2,
		Version:                    job.Build().String(),
	}
	root.SetVersionTemplate("llmrun {{.Version}}\n")
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&stage.logFormat, "log-format", logging.FormatText, "text (lines for people; timestamped when stderr is not a terminal) or json (for log shippers)")
	pf.BoolVarP(&stage.verbose, "verbose", "v", false, "log one line per attempt (never keys, headers or bodies)")
	pf.StringVar(&stage.config, "config", "", "config file: named endpoints, pools and defaults for any flag (default: ./"+DefaultConfig+" if present); flags override it")
	stage.io = io
	root.AddCommand(newBatchCmd(io, nil), newEstimateCmd(io), newMockCmd(io), newStatusCmd(io), newExportCmd(io), newCancelCmd(io), newRepairCmd(io), newVersionCmd(io), newCacheCmd(io))
	return root, stage
}

// Main runs llmrun with the process's arguments and returns its exit code.
func Main() int {
	log.SetOutput(providers.QuietHTTPLog(os.Stderr)) // net/http quotes a misbehaving server's bytes there
	io := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrIsTerminal: isTerminal(os.Stderr), Width: func() int { return termWidth(os.Stderr) }, Getenv: os.Getenv, MemoryLimit: setMemoryLimit(os.Getenv), GCPercent: setGCPercent(os.Getenv)}
	stop := startProfiles(os.Getenv, func(msg string) { fmt.Fprintln(os.Stderr, "llmrun: "+msg) })
	defer stop()
	return Execute(context.Background(), io, os.Args[1:])
}

// Execute runs the command line args and maps the outcome to an exit code.
func Execute(ctx context.Context, io *IO, args []string) int {
	if io.Log == nil {
		io.Log = logging.New(io.Err, logging.Options{Timestamps: !io.ErrIsTerminal})
	}
	root, stage := newRoot(io)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	err = stage.wrap(c, err)
	code := ExitCode(err)
	if err != nil && !errors.Is(err, ending.ErrFailures) {
		io.Log.Error(plainMessage(err))
	}
	return code
}

// ExitCode maps an error to llmrun's exit status. It is the only place
// that knows the mapping.
func ExitCode(err error) int {
	var (
		ue  *job.UsageError
		ie  *source.InputError
		ce  *checkpoint.CorruptError
		le  *checkpoint.LockedError
		se  *checkpoint.StateError
		ae  *ending.AbortError
		sig *ending.InterruptedError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &sig):
		return ending.ExitSignalCode(sig.Signal)
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
func finish(io *IO, summaryFile string, sum *report.Summary, runErr error) error {
	if sum == nil {
		return runErr
	}
	sum.ExitCode = ExitCode(runErr)
	hint := resumeHint(sum, runErr, os.Args[1:])
	if endsOnTerminal(io) {
		fmt.Fprint(io.Err, sum.Block(outcome(sum, runErr), strings.TrimPrefix(hint, "resume with: "), termWidthOf(io)))
	} else {
		io.Log.Info(sum.Text(), slog.Any("summary", sum.LogValue()))
		if runErr != nil && sum.ExitCode != ExitFailed && sum.ExitCode != ExitOK {
			io.Log.Info(hint)
		}
	}
	if summaryFile != "" {
		if err := sum.WriteFile(summaryFile); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// maskArgs is "llmrun" and args, with what may be a secret masked.
func maskArgs(in []string) string {
	args := []string{"llmrun"}
	header := false // the previous argument was -H or --header
	for _, a := range in {
		switch {
		case header:
			a = maskHeader(a)
		case strings.HasPrefix(a, "--header="):
			a = "--header=" + maskHeader(strings.TrimPrefix(a, "--header="))
		case strings.HasPrefix(a, "-H") && len(a) > 2:
			a = "-H" + maskHeader(a[2:])
		default:
			a = maskURLArg(a)
		}
		header = a == "-H" || a == "--header"
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// maskURLArg is a, or the value of a --flag=value a, with a URL's
// userinfo dropped and its query values masked (--base-url
// 'https://host/v1beta?key=X' carries Gemini's key).
func maskURLArg(a string) string {
	i := strings.Index(a, "://")
	if i < 0 {
		return a
	}
	prefix, v := "", a
	if j := strings.LastIndex(a[:i], "="); j >= 0 && strings.HasPrefix(a, "-") {
		prefix, v = a[:j+1], a[j+1:]
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "":
	case u.RawQuery != "":
		return prefix + providers.StripUserinfo(v)
	case u.User != nil:
		return prefix + u.Redacted()
	}
	return a
}

// maskHeader keeps a --header's name and masks its value, quoted for the
// shell.
func maskHeader(h string) string {
	name, _, _ := strings.Cut(h, ":")
	return "'" + strings.TrimSpace(name) + ": ***'"
}

func newVersionCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print llmrun's version and the revision it was built from",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(io.Out, "llmrun %s\n", job.Build())
			return err
		},
	}
}
