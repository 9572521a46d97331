package cmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/job"
)

func addCostFlags(f *pflag.FlagSet, o *job.CostOptions) {
	f.StringVar(&o.Prices, "prices", "", "JSON file of model prices overriding or adding to the built-in list (LiteLLM's shape, or {\"model\": {\"input_per_mtok\": …, \"output_per_mtok\": …}})")
	f.Float64Var(&o.MaxCost, "max-cost", 0, "stop (exit 3, resumable) before the spend recorded in this output, earlier runs included, would pass this many USD")
	f.BoolVar(&o.DryRun, "dry-run", false, "send nothing: estimate the requests, tokens, cost and time of the run (same as llmrun estimate)")
	f.BoolVar(&o.JSON, "json", false, "with --dry-run, print the estimate as JSON")
	f.BoolVar(&o.Offline, "offline", false, "count input tokens locally only: no calls to Anthropic's or Gemini's free count_tokens endpoint (by default, with a key, estimate has it count a sample of up to 300 requests, and a live run 10 to 30 to seed its first reservations)")
}

// newEstimateCmd is `llmrun estimate`: batch --dry-run under its own name.
func newEstimateCmd(io *IO) *cobra.Command {
	c := newBatchCmd(io, nil)
	c.Use = "estimate INPUT.jsonl"
	c.Short = "Estimate a run's requests, tokens, cost and time without sending anything (no key needed)"
	c.Long = `Estimate what running INPUT.jsonl would take, without sending anything and without an API key:
per model and in total, the requests still to send (those already in the output are left out), input
tokens (the model's tokenizer where llmrun has it, else bytes/4, marked ~), output tokens at most (the
sum of max tokens) and expected (from the answers already in the output), the cost at most and expected
on the live API and through the provider's batch API, and, when limits are given (--rpm, --itpm,
--otpm, --tpm), the time the binding limit implies. It takes the batch command's flags; --json prints
the estimate as JSON.`
	hideRunOnlyFlags(c)
	run := c.RunE
	c.RunE = func(cc *cobra.Command, args []string) error {
		if err := cc.Flags().Set("dry-run", "true"); err != nil {
			return err
		}
		return run(cc, args)
	}
	return c
}

// estimateFlags are the batch flags an estimate reads: what the input is
// and how it is read, the route and model it prices, the output whose
// answers are left out, the limits the time comes from, and the prices.
var estimateFlags = map[string]bool{
	"output": true, "provider": true, "base-url": true, "model": true, "api-version": true, "system": true,
	"max-tokens": true, "template": true, "input-format": true, "lossy-utf8": true,
	"rpm": true, "itpm": true, "otpm": true, "tpm": true, "headroom": true, "burst": true, "pool": true,
	"prices": true, "json": true, "shard": true, "shards": true, "shard-index": true, "help": true,
}

// hideRunOnlyFlags hides from estimate's help the batch flags it takes
// (a config file's defaults name them, and a batch command line can be
// turned into an estimate by its first word) but never reads.
func hideRunOnlyFlags(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !estimateFlags[f.Name] {
			f.Hidden = true
		}
	})
}
