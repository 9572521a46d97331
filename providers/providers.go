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
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Format names a request/response wire format.
type Format uint8

const (
	// FormatOpenAI is the Chat Completions format (also vLLM, Ollama, Azure, OpenRouter).
	FormatOpenAI Format = iota + 1
	// FormatAnthropic is the Messages format.
	FormatAnthropic
	// FormatGemini is Gemini's generateContent format. llmrun's bodies of
	// this format also carry "model", as the other formats do; the Gemini
	// provider moves it into the URL, where the API wants it.
	FormatGemini
)

func (f Format) String() string {
	switch f {
	case FormatOpenAI:
		return "openai"
	case FormatAnthropic:
		return "anthropic"
	case FormatGemini:
		return "gemini"
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
	// MaxTokens is the body's output cap (max_tokens,
	// max_completion_tokens or max_output_tokens), 0 when absent.
	MaxTokens int
	// Endpoint is the API the body is for (the input line's url); the
	// zero value is chat.
	Endpoint Endpoint
	// Vars is the input record a template made the prompt from (a JSON
	// object), carried to the output line so answers join back without the
	// input; nil for lines that are requests themselves.
	Vars []byte
	// Priority orders the request's attempts among those waiting for the
	// same budget, higher first (the line's priority, else the run's);
	// providers ignore it.
	Priority int
	// Tags are the line's top-level "tags" (tenant, team…), for the
	// run's breakdowns; never sent, not part of the fingerprint. Nil
	// when the line has none.
	Tags map[string]string
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
	// BodyValid reports that Body is the very bytes Exchange checked to
	// be valid JSON, so that writers need not scan them again.
	BodyValid bool
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
	// BaseURL identifies the endpoint, for limiter keys, fingerprints and
	// messages: without userinfo, as it may be written anywhere.
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
	// error message and body the provider returns. Empty sends no
	// credential at all (a local server, --no-auth).
	APIKey string
	// Query is the base URL's query string (see SplitQuery), sent on
	// every request; its values are secrets (Credentials).
	Query url.Values
	// APIVersion is the dated API version a provider puts on every call
	// (Azure OpenAI's api-version); "" for the provider's default.
	APIVersion string
	// Stream selects SSE streaming (the default in the CLI).
	Stream bool
	// HTTPClient is shared by all providers; nil means a default tuned client.
	HTTPClient *http.Client
	// FirstByteTimeout bounds the wait for response headers and, for streams,
	// the first event; 0 means no bound.
	FirstByteTimeout time.Duration
	// IdleTimeout bounds the gap between two stream events; 0 means no bound.
	IdleTimeout time.Duration
	// MaxResponseBytes bounds the memory one response may take: a body may
	// hold this many bytes beyond what its max tokens explain (see
	// ResponseLimit), so an endless stream or a huge body fails its attempt
	// with ClassTooLarge instead of exhausting the machine. 0 means
	// DefaultMaxResponseBytes; raise it for embeddings-sized answers.
	MaxResponseBytes int64
	// Headers are the provider's rules for its rate-limit headers (which
	// windows count per day).
	Headers HeaderRules
	// Now is the clock used for latency figures and header dates; nil means time.Now.
	Now func() time.Time
	// UserAgent is sent on every request ("llmrun/<version>"); "" keeps
	// Go's default.
	UserAgent string
	// Header holds extra request headers (--header), set on every request
	// over the provider's own, so a gateway's auth or OpenRouter's
	// HTTP-Referer can be added. Their values may be secrets: they are
	// never logged.
	Header http.Header

	targets *targets // Post's parsed URLs and merged headers (Ready)
}

// DefaultMaxResponseBytes is MaxResponseBytes when unset: a few MiB above
// what the answer's tokens explain, enough for usage, logprobs and the
// envelope of any chat answer.
const DefaultMaxResponseBytes = 4 << 20

// Bytes per token a response may use beyond MaxResponseBytes. A plain
// answer's token is at most a few bytes of text, escaped (\uXXXX is six
// per byte); a streamed token also repeats its event's envelope (ids,
// model, usage:null, obfuscation padding: about 300 bytes on OpenAI).
// Without max tokens, assumedMaxTokens stands in (the output cap of most
// chat models).
const (
	plainBytesPerToken  = 64
	streamBytesPerToken = 1 << 10
	assumedMaxTokens    = 32 << 10
)

// MaxBoundTokens caps the max tokens a response's size bound counts,
// whatever the line says: no model writes more than about 128k tokens in
// one answer, and a line's max_tokens of 99999999999999 must not lift the
// bound (and so the memory one answer may take) out of reach.
const MaxBoundTokens = 128 << 10

// maxExplainedBytes caps what max tokens explain of a response's size. A
// stream's reassembled answer, its SSE lines and the body built from them
// can each be as large as the bytes read, so a process holds about three
// times this at worst for one answer: 48 MiB keeps that well under 256 MB,
// and still covers 128k tokens of a chat stream (about 300 bytes each on
// OpenAI). --max-response-bytes adds beyond it.
const maxExplainedBytes = 32 << 20

// ResponseLimit is how many bytes the body of one response may hold:
// MaxResponseBytes plus what maxTokens (0: unknown) explain, more per
// token for a stream, whose events repeat their envelope.
func (c *Config) ResponseLimit(maxTokens int, stream bool) int64 {
	return c.bound(maxTokens, stream).max
}

// bound is a response's size limit and how it was derived, for the error
// that explains it.
type bound struct {
	max, slack int64
	tokens     int // as given; 0 for unknown
	stream     bool
}

func (c *Config) bound(maxTokens int, stream bool) bound {
	b := bound{slack: c.MaxResponseBytes, tokens: maxTokens, stream: stream}
	if b.slack <= 0 {
		b.slack = DefaultMaxResponseBytes
	}
	n, per := int64(maxTokens), int64(plainBytesPerToken)
	if n <= 0 {
		n = assumedMaxTokens
	}
	n = min(n, MaxBoundTokens)
	if stream {
		per = streamBytesPerToken
	}
	b.max = b.slack + min(n*per, maxExplainedBytes)
	return b
}

// tooLarge is the ClassTooLarge error of a body past b; size is what the
// server announced (content-length), or 0 when the reads went past b.
func (b bound) tooLarge(size int64) *Error {
	what := "response body"
	if b.stream {
		what = "stream"
	}
	tokens := "no max tokens"
	if b.tokens > 0 {
		tokens = fmt.Sprintf("%d max tokens", b.tokens)
	}
	over := fmt.Sprintf("goes past %d bytes", b.max)
	if size > 0 {
		over = fmt.Sprintf("announces %d bytes (content-length), over %d", size, b.max)
	}
	return &Error{Class: ClassTooLarge, Message: fmt.Sprintf(
		"%s %s, the bound for %s with a max response size of %d bytes: an endless or broken answer, or an answer larger than expected (raise --max-response-bytes)",
		what, over, tokens, b.slack)}
}

// Clock returns c.Now or time.Now.
func (c *Config) Clock() func() time.Time {
	if c.Now != nil {
		return c.Now
	}
	return time.Now
}
