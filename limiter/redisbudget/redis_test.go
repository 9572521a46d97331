package redisbudget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/limiter/redisbudget/redistest"
)

// redisAddr is the address of the redis-server TestMain started.
var redisAddr string

// TestMain runs every test against one real redis-server started on a free
// port (no persistence) and stops it afterwards. Tests isolate themselves
// by key name. Without redis-server on PATH the tests fail: CI installs it.
func TestMain(m *testing.M) {
	stop, err := startRedis()
	if errors.Is(err, redistest.ErrMissing) && !redistest.Required() {
		fmt.Fprintf(os.Stderr, "redisbudget: tests not run: %v (CI requires them)\n", err)
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "redisbudget tests need a real Redis: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func startRedis() (stop func(), err error) {
	redisAddr, stop, err = redistest.Start()
	return stop, err
}

// newClient returns a client of its own: a separate "process".
func newClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 16})
	t.Cleanup(func() { c.Close() })
	return c
}

// newBudget returns a Budget with its own client, closed at cleanup.
func newBudget(t *testing.T, lim limiter.Limits, opt ...func(*Options)) *Budget {
	t.Helper()
	o := Options{
		Client:   newClient(t),
		Defaults: lim,
		OnError:  func(err error) { t.Errorf("OnError: %v", err) },
	}
	for _, f := range opt {
		f(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// testKey returns a key no other test uses.
func testKey(t *testing.T) string {
	return t.Name() + "/" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// levels reads a key's stored bucket levels (NaN for absent) and
// cumulative charges.
func levels(t *testing.T, b *Budget, key string) (lv, cum [numBuckets]float64) {
	t.Helper()
	k := b.key(key)
	vals, err := b.client.HMGet(context.Background(), k.redisKeys[0], "l1", "l2", "l3", "l4", "c1", "c2", "c3", "c4").Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		f := -1e308
		if s, ok := v.(string); ok {
			f, _ = strconv.ParseFloat(s, 64)
		}
		if i < numBuckets {
			lv[i] = f
		} else {
			cum[i-numBuckets] = f
		}
	}
	return lv, cum
}
