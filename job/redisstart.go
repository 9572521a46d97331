package job

import (
	"context"
	"fmt"
	"strings"

	"github.com/llmrun/llmrun/ending"
)

// redisStartError is the error of a Redis that failed at start, before
// anything was sent, with the README's exit codes: credentials Redis
// refuses are a usage error (exit 2: the --redis URL is wrong), a server
// that cannot be reached aborts the run (exit 3: rerun once it is up).
func redisStartError(addr string, err error) error {
	err = fmt.Errorf("--redis %s: %w", addr, err)
	msg := err.Error()
	for _, auth := range []string{"NOAUTH", "WRONGPASS", "invalid password", "invalid username-password", "NOPERM", "ERR AUTH"} {
		if strings.Contains(msg, auth) {
			return usage(err)
		}
	}
	return &ending.AbortError{Cause: err}
}

// silentRedis drops go-redis's own log lines (pool dial failures and the
// like): a command that reports a Redis failure in its error, such as
// status --redis, prints it once, in the log format chosen.
type silentRedis struct{}

func (silentRedis) Printf(context.Context, string, ...any) {}
