// Package redistest starts a real, throwaway redis-server for tests: on a
// free loopback port, without persistence. Without redis-server on PATH,
// tests that need it fail under CI (CI=true; .ci/run installs it) and are
// skipped elsewhere, so `go test ./...` still works on a machine with only
// Go installed.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrMissing is returned by Start when redis-server is not on PATH.
var ErrMissing = errors.New("redis-server not found on PATH (Debian/Ubuntu: apt-get install -y redis-server)")

// Required reports whether a missing redis-server is a failure (under CI)
// rather than a reason to skip.
func Required() bool { return os.Getenv("CI") != "" }

// StartOrSkip starts redis-server for one test and stops it at cleanup; it
// skips the test when redis-server is missing outside CI.
func StartOrSkip(t testing.TB) string {
	t.Helper()
	addr, stop, err := Start()
	if errors.Is(err, ErrMissing) && !Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// Start runs redis-server and returns its address and a stop function.
// args are added to the server's command line (e.g. "--requirepass", "pw").
func Start(args ...string) (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, ErrMissing
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning"}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password(args)})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer PING: %v; output:\n%s", addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// password is the --requirepass among args, if any.
func password(args []string) string {
	for i, a := range args {
		if a == "--requirepass" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
