package cmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/llmrun/llmrun/job"
	"github.com/llmrun/llmrun/providers/mock"
)

func newMockCmd(io *IO) *cobra.Command {
	var cfg mock.Config
	var addr string
	c := &cobra.Command{
		Use:   "mock",
		Short: "Serve the built-in mock provider (OpenAI, Responses, embeddings, Anthropic, Azure and Gemini) for tests and demos",
		Long: `Serve a mock LLM provider speaking, plain and streamed:
  OpenAI Chat Completions  POST /v1/chat/completions and /chat/completions (JSON mode, n, forced
                           tool calls honoured)
  OpenAI Responses         POST /v1/responses
  OpenAI embeddings        POST /v1/embeddings
  Anthropic Messages       POST /v1/messages (forced tool_use honoured), /v1/messages/count_tokens
  Azure OpenAI             /openai/deployments/DEP/chat/completions?api-version=V and /openai/v1/...
  Gemini                   POST /v1beta/models/MODEL:generateContent, :streamGenerateContent?alt=sse,
                           :countTokens, :embedContent, :batchEmbedContents (responseMimeType JSON
                           honoured)
and the batch APIs (OpenAI /v1/files + /v1/batches and the same under /openai, Anthropic
/v1/messages/batches, Gemini :batchGenerateContent with inline requests or a file uploaded through
/upload/v1beta/files), with deterministic answers, server-side limits (429 with retry-after and
rate-limit headers; per-day requests with --rpd; acceleration limits with --acceleration), a prompt
cache that reports cached tokens for a repeated prefix, the model-family rules of the real APIs
(400 for a body a family refuses; --no-model-rules turns them off) and injectable faults. GET
/v1/models and /v1beta/models list its models; GET /mock/stats returns its counters as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return job.ServeMock(c.Context(), io, addr, cfg)
		},
	}
	f := c.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address")
	f.IntVar(&cfg.Concurrency, "concurrency", 0, "most requests in flight before 429 (0: unlimited)")
	f.Float64Var(&cfg.RPM, "rpm", 0, "requests per minute (0: unlimited)")
	f.Float64Var(&cfg.ITPM, "itpm", 0, "input tokens per minute (0: unlimited)")
	f.Float64Var(&cfg.OTPM, "otpm", 0, "output tokens per minute (0: unlimited)")
	f.DurationVar(&cfg.Burst, "burst", time.Second, "bucket capacity in seconds of refill")
	f.BoolVar(&cfg.NoLimitHeaders, "no-limit-headers", false, "send no rate-limit headers (the limits still apply), like a gateway or proxy")
	f.BoolVar(&cfg.NoRetryAfter, "no-retry-after", false, "send 429s without retry-after / retry-after-ms")
	f.Float64Var(&cfg.RPD, "rpd", 0, "requests per calendar day (UTC); past it, each dialect's 429 for the day (0: unlimited)")
	f.BoolVar(&cfg.DayHeaders, "day-headers", false, "report the --rpd day in x-ratelimit-*-requests, as Groq does")
	f.Float64Var(&cfg.OverloadRate, "overload-rate", 0, "fraction of attempts answered 529/503 overloaded")
	f.Float64Var(&cfg.MidStreamRate, "midstream-rate", 0, "fraction of attempts failing after some content")
	f.Float64Var(&cfg.ResetRate, "reset-rate", 0, "fraction of attempts whose connection is cut")
	f.Float64Var(&cfg.ServerErrorRate, "server-error-rate", 0, "fraction of attempts answered 500")
	f.BoolVar(&cfg.Outage, "outage", false, "answer 500 to everything")
	f.BoolVar(&cfg.Acceleration, "acceleration", false, "refuse sharp increases: a 5s window admits at most max(20, 2x the previous window's admissions) (429 slow_down / Anthropic acceleration limit)")
	f.BoolVar(&cfg.StreamFailure, "stream-failure", false, `answer every streamed request with 500 {"status":"failure"} (plain requests succeed), like a gateway that cannot stream`)
	f.BoolVar(&cfg.SpendCap, "spend-cap", false, "answer the spend-cap / insufficient_quota error to everything")
	f.StringVar(&cfg.APIKey, "api-key", "", "require this API key (401 otherwise)")
	f.BoolVar(&cfg.AzureChargeMaxTokens, "azure-charge-max-tokens", false, "Azure: admission charges prompt + max_tokens into the token counter (--itpm), kept whatever the answer, as Microsoft documents")
	f.BoolVar(&cfg.NoUsage, "no-usage", false, "answer Chat Completions without usage, as some local servers do")
	f.BoolVar(&cfg.NoModelRules, "no-model-rules", false, "accept bodies a model's family refuses (max_tokens to reasoning models, temperature with top_p to recent Claude models, JSON mode without \"json\")")
	f.BoolVar(&cfg.KnownModels, "known-models", false, "answer 404 to models the provider does not serve (other than mock-1)")
	f.DurationVar(&cfg.TokenDelay, "token-delay", 0, "delay per generated token (slow streams)")
	f.IntVar(&cfg.AnswerWords, "answer-words", 0, "words in every answer after its head (0: 8 to 24, drawn per prompt); long answers for streaming benchmarks")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed for fault selection and answers")
	f.DurationVar(&cfg.BatchDelay, "batch-delay", 0, "how long a provider batch takes to process")
	f.Float64Var(&cfg.BatchFailRate, "batch-fail-rate", 0, "fraction of batch items answered with an error")
	f.BoolVar(&cfg.BatchExpire, "batch-expire", false, "batches expire after part of their items (the rest: expired)")
	return c
}
