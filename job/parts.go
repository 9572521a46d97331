package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/limiter/redisbudget"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
	"github.com/llmrun/llmrun/runner/retry"
	"github.com/llmrun/llmrun/source"
)

// buildRoutes builds the primary route and the fallback hops from the
// provider registry.
func (b *batch) buildRoutes() (err error) {
	if b.pools, err = b.o.poolLimits(); err != nil {
		return err
	}
	shape, err := inputShape(b.src, b.o)
	if err != nil {
		return err
	}
	primary, entry, at, model, err := b.routeTo(b.o.Provider, shape, b.o.BaseURL)
	if err != nil {
		return err
	}
	if b.o.Pool != "" {
		primary.Pool = b.o.Pool
	}
	if b.o.Model == "" { // the endpoint's model is the one of lines that name none
		b.o.Model = model
	}
	b.primary, b.primaryAt = entry, at
	b.routes = []runner.Route{primary}
	for _, hop := range b.o.Fallback {
		name, model, _ := strings.Cut(hop, ":")
		rt, hopEntry, _, epModel, err := b.routeTo(name, shape, "")
		if err != nil {
			return err
		}
		if rt.Model == "" { // a model the hop's URL names wins
			rt.Model = cmp.Or(model, epModel)
		}
		rules := b.o.modelRules(b.io, hopEntry, rt.Provider.BaseURL())
		rt.Rules = &rules
		b.routes = append(b.routes, rt)
	}
	return nil
}

// route builds the route of the provider called name ("" infers it from
// the input's shape and the keys set) at baseURL ("" for the
// environment's or the provider's own).
func (b *batch) route(name string, shape providers.Format, baseURL string) (runner.Route, registry.Entry, error) {
	return b.routeAt(name, shape, registry.Endpoint{BaseURL: baseURL})
}

// routeAt is route at a config file's endpoint: its base URL, key
// variable, api-version and headers.
func (b *batch) routeAt(name string, shape providers.Format, at registry.Endpoint) (runner.Route, registry.Entry, error) {
	entry, err := registry.Resolve(name, shape, b.io.Getenv)
	if err != nil {
		return runner.Route{}, entry, usage(err)
	}
	p, err := b.set.ProviderAt(entry, at)
	mk, ce := (*registry.MissingKeyError)(nil), (*registry.ConfigError)(nil)
	if errors.As(err, &mk) || errors.As(err, &ce) {
		return runner.Route{}, entry, usage(err)
	} else if err != nil {
		return runner.Route{}, entry, err
	}
	rt := runner.Route{Provider: p, Admission: entry.Admission}
	if b.o != nil && b.o.Stream {
		rt.Plain, _ = b.set.PlainProviderAt(entry, at) // built as p was: no error left
	}
	if entry.Model != nil {
		// An Azure deployment URL: every request goes to its deployment,
		// which is the budget's model key whatever the lines say.
		rt.Model = entry.Model(p.BaseURL())
	}
	if entry.Mock {
		rt.Endpoint = "builtin:" + entry.Name // its port changes every run; its answers do not
	}
	return rt, entry, nil
}

// inputShape is the wire format of the input's first line (source.Shape:
// Anthropic for {"params":...}, Gemini for {"request":...}, OpenAI
// otherwise), which picks the provider of a run that names none. With
// --template the lines are records, not requests, whatever their fields
// are called (an email's "body"): they render simple lines, OpenAI's.
func inputShape(src *source.Source, o *BatchOptions) (providers.Format, error) {
	if o.Source.tmpl != nil {
		return providers.FormatOpenAI, nil
	}
	return src.Shape()
}

// newBudget is the in-process budget, or with --redis one shared through
// Redis by every llmrun pointed at it; closeBudget releases its
// connections.
func newBudget(ctx context.Context, io *IO, o *BatchOptions, limits limiter.Limits, pools map[string]limiter.Limits) (budget limiter.Budget, closeBudget func(), err error) {
	warn := func(msg string) { io.warnf("%s", msg) }
	if o.Redis == "" {
		l := limiter.New(limiter.Options{Defaults: limits, MaxPause: o.MaxPause, Warn: warn, Aging: o.PriorityAging})
		for name, lim := range pools {
			l.SetLimits(name, lim)
		}
		return limiter.AsBudget(l), func() {}, nil
	}
	ropt, err := redis.ParseURL(o.Redis)
	if err != nil {
		return nil, nil, usage(fmt.Errorf("--redis: %w", err))
	}
	// One line when Redis goes down and one when it is back, never the
	// password, instead of a line per failed call and per go-redis pool
	// message. go-redis logs only through a process-wide logger.
	health := redisbudget.NewHealth(ropt.Addr, warn, nil, ropt.Password)
	redis.SetLogger(health)
	rc := redis.NewClient(ropt)
	health.Watch(rc)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = rc.Ping(pctx).Err()
	cancel()
	if err != nil {
		rc.Close()
		return nil, nil, redisStartError(ropt.Addr, err)
	}
	rb, err := redisbudget.New(redisbudget.Options{
		Client:   rc,
		Defaults: limits,
		OnError:  health.Report,
		MaxPause: o.MaxPause,
		Aging:    o.PriorityAging,
		Warn:     warn,
		// Only the holder of the output's lock runs in this role: a rerun
		// after kill -9 frees the dead run's slots at once.
		Holder: redisbudget.Holder{Role: absPath(o.Output)},
	})
	if err != nil {
		rc.Close()
		return nil, nil, usage(err)
	}
	for name, lim := range pools {
		if err := rb.SetLimits(name, lim); err != nil {
			rb.Close()
			rc.Close()
			return nil, nil, usage(fmt.Errorf("pool %s: %w", name, err))
		}
	}
	return rb, func() { rb.Close(); rc.Close() }, nil
}

// absPath is path made absolute when possible.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// guard builds the answer guard from --require-json, --json-schema and
// --min-chars.
func (o *BatchOptions) guard() (retry.Guard, error) {
	g := retry.Guard{RequireJSON: o.RequireJSON, MinChars: o.MinChars}
	if o.JSONSchema != "" {
		if _, err := os.Stat(o.JSONSchema); err != nil {
			return g, usagef("--json-schema %s: %v", o.JSONSchema, PlainPathError(err))
		}
		s, err := retry.LoadSchema(o.JSONSchema)
		if err != nil {
			return g, usage(err)
		}
		g.Schema = s
	}
	return g, nil
}

// BreakerOptions configure each key's circuit breaker.
type BreakerOptions struct {
	Window, MinAttempts, Probes int
	WindowTime, Cooldown        time.Duration
	FailureRate                 float64
	// Threshold is the deprecated --breaker-threshold; when set it is
	// MinAttempts, the fewest failures that open the breaker.
	Threshold int
}

// validate rejects values the breaker would silently replace by defaults.
func (b BreakerOptions) validate() error {
	switch {
	case !(b.FailureRate > 0 && b.FailureRate <= 1):
		return usagef("--breaker-failure-rate must be in (0, 1], got %v", b.FailureRate)
	case b.Window <= 0 || b.MinAttempts <= 0 || b.Probes <= 0 || b.Threshold < 0:
		return usagef("--breaker-window, --breaker-min-attempts and --breaker-probes must be positive")
	case b.Window > maxBreakerWindow || b.MinAttempts > maxBreakerWindow || b.Threshold > maxBreakerWindow || b.Probes > MaxConcurrency:
		return usagef("--breaker-window and --breaker-min-attempts must be at most %d, --breaker-probes at most %d (the breaker keeps that many outcomes)", maxBreakerWindow, MaxConcurrency)
	case b.WindowTime <= 0 || b.Cooldown <= 0:
		return usagef("--breaker-window-time and --breaker-cooldown must be positive")
	}
	return nil
}

// maxBreakerWindow bounds --breaker-window: the breaker keeps a ring of
// that many outcomes per route.
const maxBreakerWindow = 1_000_000

// Config is the breaker configuration the options ask for.
func (b BreakerOptions) Config(maxOutage time.Duration) retry.BreakerConfig {
	c := retry.BreakerConfig{Window: b.Window, WindowTime: b.WindowTime, MinAttempts: b.MinAttempts, FailureRate: b.FailureRate,
		Cooldown: b.Cooldown, Probes: b.Probes, MaxOutage: maxOutage}
	if b.Threshold > 0 {
		c.MinAttempts = b.Threshold
	}
	return c
}
