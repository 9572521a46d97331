// Package cache keeps successful answers across runs, keyed by what the
// request asks (endpoint path, model, body), not by who asks it (custom_id,
// priority, tags) nor where it is sent: a CI job that writes a new output
// pays only for the prompts that changed. Two backends: a directory of
// content-addressed files (Dir) and Redis (Redis), shared by CI runners.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Key identifies a request by content: SHA-256 of the endpoint path, the
// model and the body. A strong hash, as a shared cache may hold millions of
// answers written by many runs and a collision would serve a wrong answer.
type Key [32]byte

// KeyOf is the key of a request to endpoint path ep (e.g.
// /v1/chat/completions) for model with body. The body is hashed as given:
// the caller passes its canonical form.
func KeyOf(ep, model string, body []byte) Key {
	h := sha256.New()
	h.Write([]byte("llmrun-cache-v1\x00"))
	h.Write([]byte(ep))
	h.Write([]byte{0})
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write(body)
	var k Key
	h.Sum(k[:0])
	return k
}

// String is the key as 64 lowercase hex digits.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Entry is one cached answer, with what it was for (checked on every hit,
// so an entry is never served for another endpoint or model) and what it
// cost when it was paid for.
type Entry struct {
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	// Provider and ResponseModel are who answered and the model it named.
	Provider      string          `json:"provider,omitempty"`
	ResponseModel string          `json:"response_model,omitempty"`
	Status        int             `json:"status"`
	RequestID     string          `json:"request_id,omitempty"`
	Body          json.RawMessage `json:"body"`
	InputTokens   int64           `json:"input_tokens"`
	OutputTokens  int64           `json:"output_tokens"`
	CacheRead     int64           `json:"cache_read_tokens,omitempty"`
	CacheWrite    int64           `json:"cache_write_tokens,omitempty"`
	Estimated     bool            `json:"usage_estimated,omitempty"`
	// CostUSD is what the answer cost when it was sent (nil: unpriced);
	// a hit saves it.
	CostUSD *float64  `json:"cost_usd,omitempty"`
	Created time.Time `json:"created"`
}

// Stats describes a cache: what it holds and, for this process, how it
// was used.
type Stats struct {
	Backend string `json:"backend"`
	Where   string `json:"where"`
	Entries int64  `json:"entries"`
	Bytes   int64  `json:"bytes"`
	// MaxBytes is the size bound (0: none).
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Corrupt counts entries found broken (torn or damaged) and dropped.
	Corrupt int64 `json:"corrupt,omitempty"`
}

// Pruned is what Prune removed.
type Pruned struct {
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Left is the size after pruning.
	Left int64 `json:"bytes_left"`
}

// Cache stores answers. Implementations are safe for concurrent use, by
// goroutines and by processes sharing the same directory or Redis.
type Cache interface {
	// Get returns the entry for k; ok is false on a miss. A damaged entry
	// is a miss, never a hit.
	Get(ctx context.Context, k Key) (e *Entry, ok bool, err error)
	// Put stores e under k, replacing what was there.
	Put(ctx context.Context, k Key, e *Entry) error
	Stats(ctx context.Context) (Stats, error)
	// Prune removes the least recently used entries until the cache
	// holds at most maxBytes (0: the cache's own bound), and leftovers of
	// interrupted writes.
	Prune(ctx context.Context, maxBytes int64) (Pruned, error)
	// Clear removes every entry; it returns how many.
	Clear(ctx context.Context) (int64, error)
	Close() error
}

// Options configure Open.
type Options struct {
	// MaxBytes bounds a directory cache (Prune evicts down to it).
	MaxBytes int64
	// TTL is how long a Redis entry lives (0: DefaultTTL).
	TTL time.Duration
	// MaxValueBytes bounds one Redis value (0: DefaultMaxValue); a larger
	// answer is not cached.
	MaxValueBytes int
	// Now is the clock for access times; nil is time.Now.
	Now func() time.Time
}

// ErrTooLarge is returned by Put for a value over the backend's bound.
var ErrTooLarge = errors.New("cache: answer too large to cache")

// Open opens the cache at where: a redis:// or rediss:// URL, or a
// directory (made if missing).
func Open(where string, o Options) (Cache, error) {
	if where == "" {
		return nil, errors.New("cache: no location given")
	}
	if strings.HasPrefix(where, "redis://") || strings.HasPrefix(where, "rediss://") {
		return OpenRedis(where, o)
	}
	if strings.Contains(where, "://") {
		return nil, fmt.Errorf("cache: %q: want a directory or a redis:// URL", where)
	}
	return OpenDir(where, o)
}

// Mode says which way a run uses the cache.
type Mode struct{ Read, Write bool }

// ParseMode parses --cache-mode: read, write or readwrite ("" is
// readwrite).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "readwrite", "rw":
		return Mode{Read: true, Write: true}, nil
	case "read":
		return Mode{Read: true}, nil
	case "write":
		return Mode{Write: true}, nil
	}
	return Mode{}, fmt.Errorf("--cache-mode %q: want read, write or readwrite", s)
}

// matches reports whether e was stored for endpoint ep and model.
func (e *Entry) matches(ep, model string) bool { return e.Endpoint == ep && e.Model == model }

// Lookup is Get that also checks the entry was made for endpoint ep and
// model: a hit is never used for another.
func Lookup(ctx context.Context, c Cache, k Key, ep, model string) (*Entry, bool, error) {
	e, ok, err := c.Get(ctx, k)
	if err != nil || !ok || !e.matches(ep, model) {
		return nil, false, err
	}
	return e, true, nil
}
