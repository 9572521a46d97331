package job

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrun/llmrun/limiter/redisbudget"
)

// BudgetReport is what `llmrun status --redis` shows: every budget key on
// a Redis as all the processes sharing it see it.
type BudgetReport struct {
	// Redis is the server's address (never a password).
	Redis string                  `json:"redis"`
	Keys  []redisbudget.KeyReport `json:"keys"`
}

// budgetStatus reads every budget key on the Redis at url.
func budgetStatus(ctx context.Context, url string) (*BudgetReport, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, usage(fmt.Errorf("--redis: %w", err))
	}
	redis.SetLogger(silentRedis{}) // its failures come back as errors, said once
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rep := &BudgetReport{Redis: opt.Addr, Keys: []redisbudget.KeyReport{}}
	keys, err := redisbudget.Keys(ctx, c, "")
	if err != nil {
		return nil, redisStartError(opt.Addr, err)
	}
	for _, k := range keys {
		kr, err := redisbudget.Inspect(ctx, c, "", k)
		if err != nil {
			return nil, fmt.Errorf("--redis %s: %w", opt.Addr, err)
		}
		rep.Keys = append(rep.Keys, kr)
	}
	return rep, nil
}

// bucketNames name a key's buckets, in redisbudget's order.
var bucketNames = [4]struct{ limit, level string }{{"RPM", "requests"}, {"ITPM", "input"}, {"OTPM", "output"}, {"TPM", "tokens"}}

func printBudget(w io.Writer, rep *BudgetReport) {
	fmt.Fprintf(w, "redis %s: %d budget keys\n", rep.Redis, len(rep.Keys))
	for _, k := range rep.Keys {
		fmt.Fprintf(w, "%s\n", k.Key)
		var lim, lvl, learned []string
		for i, n := range bucketNames {
			if k.PerMinute[i] > 0 {
				lim = append(lim, fmt.Sprintf("%s %s", num(k.PerMinute[i]), n.limit))
				lvl = append(lvl, fmt.Sprintf("%s %s/%s", n.level, num(math.Floor(k.Level[i])), num(k.Capacity[i])))
			}
			if k.Learned[i] > 0 {
				learned = append(learned, fmt.Sprintf("%s %s", num(k.Learned[i]), n.limit))
			}
		}
		if k.Concurrency > 0 {
			lim = append(lim, fmt.Sprintf("concurrency %d", k.Concurrency))
		}
		if len(lim) == 0 {
			lim = []string{"none known yet"}
		}
		fmt.Fprintf(w, "  limits: %s", strings.Join(lim, ", "))
		if len(learned) > 0 {
			fmt.Fprintf(w, " (learned from headers: %s)", strings.Join(learned, ", "))
		}
		fmt.Fprintln(w)
		if len(lvl) > 0 {
			fmt.Fprintf(w, "  buckets: %s\n", strings.Join(lvl, ", "))
		}
		if k.PausedFor > 0 {
			fmt.Fprintf(w, "  paused for %v more\n", k.PausedFor.Round(time.Millisecond))
		}
		fmt.Fprintf(w, "  %d in flight, %d waiting%s", k.InFlight, k.Waiting, byPriority(k.WaitingByPriority))
		if k.Waiting > 0 && k.Blocked != "" {
			fmt.Fprintf(w, "; the first waits on %s", k.Blocked)
		}
		fmt.Fprintln(w)
		for _, p := range k.Processes {
			fmt.Fprintf(w, "    %s pid %d: %d in flight, %d waiting%s\n", p.Host, p.PID, p.InFlight, p.Waiting, byPriority(p.WaitingByPriority))
		}
	}
}

// byPriority is " (priority 1: 3, priority 0: 5)", highest first; "" if
// nothing waits.
func byPriority(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	ps := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return y - x
	})
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("priority %s: %d", p, m[p])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// num prints a limit or level without needless decimals.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// writeJSON prints v indented.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
