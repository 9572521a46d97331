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
	run := c.RunE
	c.RunE = func(cc *cobra.Command, args []string) error {
		if err := cc.Flags().Set("dry-run", "true"); err != nil {
			return err
		}
		return run(cc, args)
	}
	return c
}
