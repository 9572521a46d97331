package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/llmrun/llmrun/job"
)

// addCacheFlags adds the cross-run cache's flags (batch, estimate).
func addCacheFlags(f *pflag.FlagSet, o *job.CacheOptions) {
	f.StringVar(&o.Where, "cache", "", "answer requests from, and keep answers in, a cache shared across runs and outputs: a directory, or redis://host:port/db for CI runners that share one")
	addCacheStoreFlags(f, o)
	f.StringVar(&o.Mode, "cache-mode", "", "read, write or readwrite (default readwrite): read only serves hits, write only stores answers")
	f.BoolVar(&o.SkipSampled, "cache-skip-sampled", false, "leave out requests that sample (temperature above 0 or unset, n above 1): neither served nor stored")
}

// addCacheStoreFlags are the flags that say how the store is bounded.
func addCacheStoreFlags(f *pflag.FlagSet, o *job.CacheOptions) {
	f.StringVar(&o.MaxSize, "cache-max-size", "", "bound a directory cache (e.g. 2GB): least recently used answers are evicted after each run and by llmrun cache prune")
	f.DurationVar(&o.TTL, "cache-ttl", 0, "how long an answer lives in a Redis cache (default 168h)")
}

// newCacheCmd is `llmrun cache stats|prune|clear`.
func newCacheCmd(io *IO) *cobra.Command {
	o := job.CacheOptions{}
	c := &cobra.Command{
		Use:   "cache stats|prune|clear [--cache DIR|redis://…]",
		Short: "Report, prune or clear the cross-run answer cache",
		Long: `Cache works on the answer cache that batch --cache fills: stats prints its entries and bytes as
JSON; prune removes leftovers of interrupted writes and, with --cache-max-size, the least recently
used answers until the rest fit (a Redis cache expires answers by --cache-ttl instead); clear removes
every answer. Like batch, it takes the cache, its size bound and TTL from the config file's cache:
(--config, or ./llmrun.yaml) when the flags do not give them.`,
		Args:        cobra.ExactArgs(1),
		ValidArgs:   []string{"stats", "prune", "clear"},
		Annotations: map[string]string{configurable: configOwnFlags},
		RunE: func(c *cobra.Command, args []string) error {
			return job.CacheCommand(c.Context(), io, args[0], o)
		},
	}
	c.Flags().StringVar(&o.Where, "cache", "", "the cache: a directory or redis://host:port/db")
	addCacheStoreFlags(c.Flags(), &o)
	return c
}

// cacheDefaults turns the config file's top-level cache: into flag
// defaults: a location, or a mapping of location, mode, max_size, ttl and
// skip_sampled.
func cacheDefaults(n *yaml.Node) ([]configDefault, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		return []configDefault{{flag: "cache", values: []string{n.Value}, line: n.Line}}, nil
	case yaml.MappingNode:
	default:
		return nil, fmt.Errorf("%d: cache: want a directory, a redis:// URL or a mapping", n.Line)
	}
	flags := map[string]string{"location": "cache", "mode": "cache-mode", "max_size": "cache-max-size", "ttl": "cache-ttl", "skip_sampled": "cache-skip-sampled"}
	var out []configDefault
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		flag, ok := flags[k.Value]
		if !ok || v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%d: cache: %s: want location, mode, max_size, ttl or skip_sampled with a plain value", k.Line, k.Value)
		}
		out = append(out, configDefault{flag: flag, values: []string{v.Value}, line: k.Line})
	}
	return out, nil
}
