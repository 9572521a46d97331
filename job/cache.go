package job

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmrun/llmrun/cache"
)

// CacheOptions are --cache and its companions (batch, estimate and the
// cache commands).
type CacheOptions struct {
	// Where is a directory or a redis:// URL; "" uses no cache.
	Where string
	// Mode is read, write or readwrite ("" is readwrite).
	Mode string
	// MaxSize bounds a directory cache ("" or "0": none), e.g. 2GB.
	MaxSize string
	// TTL is how long a Redis entry lives (0: cache.DefaultTTL).
	TTL time.Duration
	// SkipSampled leaves out requests that sample (temperature > 0, n > 1).
	SkipSampled bool
}

// openCache opens the run's cache; nil without --cache. Bad options are
// usage errors, found before anything is sent.
func openCache(o *CacheOptions) (*cache.Use, error) {
	if o.Where == "" {
		if o.Mode != "" || o.MaxSize != "" || o.SkipSampled || o.TTL != 0 {
			return nil, usagef("--cache-mode, --cache-max-size, --cache-ttl and --cache-skip-sampled need --cache DIR|redis://…")
		}
		return nil, nil
	}
	mode, err := cache.ParseMode(o.Mode)
	if err != nil {
		return nil, usage(err)
	}
	c, err := openCacheStore(o)
	if err != nil {
		return nil, err
	}
	return &cache.Use{Cache: c, Mode: mode, SkipSampled: o.SkipSampled}, nil
}

// openCacheStore opens the store --cache names.
func openCacheStore(o *CacheOptions) (cache.Cache, error) {
	if o.Where == "" {
		return nil, usagef("no cache given: pass --cache DIR|redis://…, or set cache: in the config file (--config, or ./llmrun.yaml)")
	}
	maxBytes, err := parseSize(o.MaxSize)
	if err != nil {
		return nil, usagef("--cache-max-size %q: %v", o.MaxSize, err)
	}
	if o.TTL < 0 {
		return nil, usagef("--cache-ttl %v: must not be negative", o.TTL)
	}
	c, err := cache.Open(o.Where, cache.Options{MaxBytes: maxBytes, TTL: o.TTL})
	if err != nil {
		return nil, usage(err)
	}
	return c, nil
}

// pruneCache keeps a directory cache within --cache-max-size after a run.
func pruneCache(io *IO, cu *cache.Use, o *CacheOptions) {
	if cu == nil || o.MaxSize == "" || !cu.Mode.Write {
		return
	}
	if _, dir := cu.Cache.(*cache.Dir); !dir {
		return // Redis bounds itself (TTL, maxmemory)
	}
	if _, err := cu.Cache.Prune(context.Background(), 0); err != nil {
		io.warnf("pruning the cache: %v", err)
	}
}

// parseSize parses a byte size: a number with an optional K, M, G or T
// (powers of 1024; a trailing B or iB is allowed).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	if s == "" {
		return 0, nil
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, "IB"), "B")
	mult := int64(1)
	if n := len(s); n > 0 {
		if i := strings.IndexByte("KMGT", s[n-1]); i >= 0 {
			mult = int64(1) << (10 * (i + 1))
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a size such as 500MB or 2GB")
	}
	return int64(v * float64(mult)), nil
}

// CacheCommand runs `llmrun cache stats|prune|clear` on the cache o names.
func CacheCommand(ctx context.Context, io *IO, what string, o CacheOptions) error {
	c, err := openCacheStore(&o)
	if err != nil {
		return err
	}
	defer c.Close()
	var v any
	switch what {
	case "stats":
		v, err = c.Stats(ctx)
	case "prune":
		v, err = c.Prune(ctx, 0)
	case "clear":
		var n int64
		n, err = c.Clear(ctx)
		v = map[string]int64{"removed": n}
	default:
		return usagef("llmrun cache %q: want stats, prune or clear", what)
	}
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	_, err = fmt.Fprintf(io.Out, "%s\n", b)
	return err
}
