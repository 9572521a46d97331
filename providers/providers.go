// Package providers holds what every LLM provider shares: the request and
// response types the runner moves around, the typed error with its retry
// classification, and the parsing of rate-limit and retry-after headers.
//
// Implementations (providers/openai, providers/anthropic) import this
// package; this package imports none of them. Choosing a provider by name
// happens in providers/registry, the one table of providers.
package providers

import (
	"context"
	"net/http"
	"time"
)

// Format names a request/response wire format.
type Format uint8

const (
	// FormatOpenAI is the Chat Completions format (also vLLM, Ollama, Azure, OpenRouter).
	FormatOpenAI Format = iota + 1
	// FormatAnthropic is the Messages format.
	FormatAnthropic
)

func (f Format) String() string {
	switch f {
	case FormatOpenAI:
		return "openai"
	case FormatAnthropic:
		return "anthropic"
	}
	return "unknown"
}

// Request is one request of a batch, already shaped for its provider.
type Request struct {
	// ID is the request's custom_id, unique within the input file.
	ID string
	// Line is the 1-based input line, for messages.
	Line int
	// Body is the provider's request body, JSON, without stream flags
	// (the provider sets stream/stream_options itself).
	Body []byte
	// Model is the body's model, for limiter keys and output.
	Model string
	// MaxTokens is the body's output cap (max_tokens or
	// max_completion_tokens), 0 when absent.
	MaxTokens int
}

// Usage is the token usage a provider reports for one response.
type Usage struct {
	// InputTokens counts every input token of the request, cached ones
	// included (OpenAI prompt_tokens; Anthropic input_tokens +
	// cache_read_input_tokens + cache_creation_input_tokens).
	InputTokens  int64
	OutputTokens int64
	// CacheReadTokens is the part of InputTokens served from the provider's
	// prompt cache (OpenAI prompt_tokens_details.cached_tokens, Anthropic
	// cache_read_input_tokens): billed at the cache-read price and, on
	// Anthropic, not counted against input TPM.
	CacheReadTokens int64
	// CacheWriteTokens is the part of InputTokens written to the prompt
	// cache (Anthropic cache_creation_input_tokens): billed at the
	// cache-write price.
	CacheWriteTokens int64
	// Estimated reports that the provider sent no usage and these numbers
	// are llmrun's own estimate (local servers that omit usage).
	Estimated bool
}

// Response is one successful answer. Body is always the non-streaming shape,
// reassembled from the events when the call was streamed, so output does not
// depend on whether streaming was used.
type Response struct {
	Status    int
	RequestID string
	Body      []byte
	Model     string
	// Text is the concatenated text content of the answer (for quality guards).
	Text   string
	Usage  Usage
	Limits RateLimits
	// TTFT is the time to the first content token for streams, to the
	// response headers otherwise.
	TTFT time.Duration
}

// Provider sends one attempt of one request. It never retries: every attempt
// must pass through the runner's limiter, so hidden retries are a bug.
//
// A Provider is safe for concurrent use.
type Provider interface {
	// Name is the provider's short name ("openai", "anthropic").
	Name() string
	// Format is the wire format of the bodies Send accepts.
	Format() Format
	// BaseURL identifies the endpoint, for limiter keys.
	BaseURL() string
	// Send makes one attempt. A non-nil error is a *Error whenever the
	// provider could classify it.
	Send(ctx context.Context, req *Request) (*Response, error)
}

// Config is what every HTTP provider is built from.
type Config struct {
	// BaseURL is the API root (OpenAI: ".../v1"; Anthropic: the host root).
	BaseURL string
	// APIKey is sent in the provider's auth header and redacted from every
	// error message and body the provider returns.
	APIKey string
	// Stream selects SSE streaming (the default in the CLI).
	Stream bool
	// HTTPClient is shared by all providers; nil means a default tuned client.
	HTTPClient *http.Client
	// FirstByteTimeout bounds the wait for response headers and, for streams,
	// the first event; 0 means no bound.
	FirstByteTimeout time.Duration
	// IdleTimeout bounds the gap between two stream events; 0 means no bound.
	IdleTimeout time.Duration
	// Now is the clock used for latency figures and header dates; nil means time.Now.
	Now func() time.Time
}

// Clock returns c.Now or time.Now.
func (c *Config) Clock() func() time.Time {
	if c.Now != nil {
		return c.Now
	}
	return time.Now
}
