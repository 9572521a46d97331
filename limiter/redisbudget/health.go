package redisbudget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Health turns a Redis connection's failures into one line per state
// change, "unreachable" when it goes down and "reachable again" when it
// comes back, instead of one line per failed call and per go-redis pool
// message (an outage used to print about 60). It is safe for concurrent
// use.
//
// Wire it three ways: Watch(client) observes every command and dial of a
// client; Report is the Budget's Options.OnError (connection errors only
// change the state; other errors are told as they come); and, because
// go-redis logs through one process-wide logger, the program's main
// passes it to redis.SetLogger, where pool messages mark the state down
// and any other message is told once per kind.
type Health struct {
	name    string
	warn    func(string)
	secrets []string
	now     func() time.Time

	mu    sync.Mutex
	down  bool
	since time.Time
	// epoch counts the times the state went down: a call that began
	// before the last one (in flight when Redis died) says nothing of
	// whether it is back.
	epoch uint64
	told  map[string]bool // go-redis message formats already told
}

// NewHealth returns a Health for the Redis named name (an address: never
// a URL with credentials) that tells warn. Every secret (the password) is
// masked in every line it tells. now reads the clock; nil means time.Now.
func NewHealth(name string, warn func(string), now func() time.Time, secrets ...string) *Health {
	h := &Health{name: name, warn: warn, now: now, told: map[string]bool{}}
	if h.now == nil {
		h.now = time.Now
	}
	for _, s := range secrets {
		if s != "" {
			h.secrets = append(h.secrets, s)
		}
	}
	return h
}

// Down reports whether the last thing seen was a connection failure.
func (h *Health) Down() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// failed marks the connection down; the first failure after success is
// told.
func (h *Health) failed(cause string) {
	if _, news := h.change(true, 0); news {
		h.tell(fmt.Sprintf("redis %s: unreachable: %s", h.name, cause))
	}
}

// begin is the epoch a call starts in, for ok.
func (h *Health) begin() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch
}

// ok marks the connection up, for a call that began in epoch; the first
// success after a failure is told. A success of a call that began before
// the failure (it was answered just before Redis went away) is not news.
func (h *Health) ok(epoch uint64) {
	if d, news := h.change(false, epoch); news {
		h.tell(fmt.Sprintf("redis %s: reachable again after %v", h.name, d.Round(time.Millisecond)))
	}
}

// change moves the state to down, or up for a call that began in epoch,
// and reports whether that is news (then the caller tells it, outside the
// lock) and, coming up, how long the connection was down.
func (h *Health) change(down bool, epoch uint64) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down == down || !down && epoch != h.epoch {
		return 0, false
	}
	h.down = down
	if down {
		h.since = h.now()
		h.epoch++
		return 0, true
	}
	return h.now().Sub(h.since), true
}

// tell masks the secrets in msg and passes it on.
func (h *Health) tell(msg string) {
	if h.warn == nil {
		return
	}
	for _, s := range h.secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	h.warn(msg)
}

// Report is for Options.OnError: a connection error marks the state down
// (told once), any other error is told.
func (h *Health) Report(err error) {
	if err == nil {
		return
	}
	if connError(err) {
		h.failed(rootCause(err))
		return
	}
	h.tell(err.Error())
}

// Printf receives go-redis's log lines (see redis.SetLogger). Its
// connection-pool messages mark the state down; any other message is told
// the first time its format is seen.
func (h *Health) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	if strings.Contains(msg, "connection pool") || strings.Contains(msg, "dial") {
		h.failed(strings.TrimPrefix(msg, "redis: "))
		return
	}
	h.mu.Lock()
	seen := h.told[format]
	h.told[format] = true
	h.mu.Unlock()
	if !seen {
		h.tell("redis: " + strings.TrimPrefix(msg, "redis: "))
	}
}

// Watch observes every dial and command of c: a connection failure marks
// the state down, a command answered by Redis (an error reply included)
// marks it up.
func (h *Health) Watch(c redis.UniversalClient) { c.AddHook(healthHook{h}) }

type healthHook struct{ h *Health }

func (k healthHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil && ctx.Err() != context.Canceled {
			k.h.failed(rootCause(err))
		}
		return c, err
	}
}

func (k healthHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		e := k.h.begin()
		err := next(ctx, cmd)
		if !handshake[cmd.Name()] {
			k.h.observe(ctx, err, e)
		}
		return err
	}
}

// handshake names the commands a new connection sends before any of the
// Budget's: a connection that answers them (the subscription's, say,
// reconnecting on its own) says nothing of whether the Budget's calls work
// again, which the pool may still be failing fast.
var handshake = map[string]bool{"hello": true, "auth": true, "client": true, "select": true}

func (k healthHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		e := k.h.begin()
		err := next(ctx, cmds)
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return handshake[c.Name()] }) {
			k.h.observe(ctx, err, e)
		}
		return err
	}
}

// observe classifies the outcome of a call that began in epoch. A call the
// caller cancelled says nothing about Redis.
func (h *Health) observe(ctx context.Context, err error, epoch uint64) {
	switch {
	case err == nil || !connError(err):
		h.ok(epoch)
	case ctx.Err() == context.Canceled:
	default:
		h.failed(rootCause(err))
	}
}

// connError reports whether err is a failure to reach Redis rather than
// an answer from it (an error reply, or redis.Nil).
func connError(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

// rootCause is what failed, without the wrapping of each call site: the
// network operation ("dial tcp …: connection refused") if any, else the
// innermost error.
func rootCause(err error) string {
	if op, ok := errors.AsType[*net.OpError](err); ok {
		return op.Error()
	}
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}
