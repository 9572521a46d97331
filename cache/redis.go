package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps answers in Redis for CI runners that share one cache. Each
// value is the same checksummed encoding as a Dir file, bounded in size
// (MaxValueBytes) and set with a TTL, so the shared cache forgets answers
// nobody asked for in a while; beyond that, Redis's own maxmemory policy
// (allkeys-lru) is the size bound.
type Redis struct {
	c        *redis.Client
	where    string
	ttl      time.Duration
	maxValue int
}

// DefaultTTL is how long a Redis entry lives without --cache-ttl.
const DefaultTTL = 7 * 24 * time.Hour

// DefaultMaxValue is the largest answer cached in Redis without a bound
// set: big enough for any chat answer, small enough that one does not
// crowd a shared instance.
const DefaultMaxValue = 4 << 20

// redisPrefix namespaces the keys, with the encoding's version.
const redisPrefix = "llmrun:cache:v1:"

// OpenRedis connects to the Redis at url (redis:// or rediss://).
func OpenRedis(url string, o Options) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		// The error may quote the URL, password included: say only what.
		return nil, errors.New("cache: the --cache Redis URL does not parse (want redis://[user:password@]host:port[/db])")
	}
	r := &Redis{c: redis.NewClient(opt), where: opt.Addr, ttl: o.TTL, maxValue: o.MaxValueBytes}
	if r.ttl <= 0 {
		r.ttl = DefaultTTL
	}
	if r.maxValue <= 0 {
		r.maxValue = DefaultMaxValue
	}
	return r, nil
}

// Get reads and checks k's value.
func (r *Redis) Get(ctx context.Context, k Key) (*Entry, bool, error) {
	b, err := r.c.Get(ctx, redisPrefix+k.String()).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("cache: redis %s: %w", r.where, err)
	}
	e, err := decode(b)
	if err != nil {
		return nil, false, nil // damaged: a miss; the next Put replaces it
	}
	return e, true, nil
}

// Put sets k's value with the TTL; an answer over the bound is not stored.
func (r *Redis) Put(ctx context.Context, k Key, e *Entry) error {
	b, err := encode(e)
	if err != nil {
		return err
	}
	if len(b) > r.maxValue {
		return ErrTooLarge
	}
	if err := r.c.Set(ctx, redisPrefix+k.String(), b, r.ttl).Err(); err != nil {
		return fmt.Errorf("cache: redis %s: %w", r.where, err)
	}
	return nil
}

// each calls fn with each batch of the cache's keys.
func (r *Redis) each(ctx context.Context, fn func([]string) error) error {
	var cursor uint64
	for {
		keys, next, err := r.c.Scan(ctx, cursor, redisPrefix+"*", 1000).Result()
		if err != nil {
			return fmt.Errorf("cache: redis %s: %w", r.where, err)
		}
		if len(keys) > 0 {
			if err := fn(keys); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Stats counts the entries and their bytes (a SCAN: for a command, not a
// run's hot path).
func (r *Redis) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Backend: "redis", Where: r.where}
	err := r.each(ctx, func(keys []string) error {
		pipe := r.c.Pipeline()
		lens := make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			lens[i] = pipe.StrLen(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("cache: redis %s: %w", r.where, err)
		}
		for _, l := range lens {
			if n := l.Val(); n > 0 {
				st.Entries++
				st.Bytes += n
			}
		}
		return nil
	})
	return st, err
}

// Prune removes nothing: Redis expires entries by their TTL and evicts by
// its maxmemory policy.
func (r *Redis) Prune(ctx context.Context, _ int64) (Pruned, error) {
	st, err := r.Stats(ctx)
	return Pruned{Left: st.Bytes}, err
}

// Clear deletes every entry of the cache (other keys are left alone).
func (r *Redis) Clear(ctx context.Context) (int64, error) {
	var n int64
	err := r.each(ctx, func(keys []string) error {
		d, err := r.c.Unlink(ctx, keys...).Result()
		if err != nil {
			return fmt.Errorf("cache: redis %s: %w", r.where, err)
		}
		n += d
		return nil
	})
	return n, err
}

// Close closes the connection pool.
func (r *Redis) Close() error { return r.c.Close() }
