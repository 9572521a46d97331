package mock

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// apiError is an error answer in neutral form; each dialect renders it in
// its own shape.
type apiError struct {
	status   int // HTTP status
	anStatus int // Anthropic's status when it differs (529 overloaded)
	// OpenAI error.type, error.code and error.param ("" renders as null).
	oaType, oaCode, oaParam string
	// Anthropic error.type and error.details.error_code ("" omits details).
	anType, anDetailCode string
	// message is error.message; anMessage overrides it for Anthropic.
	message, anMessage string
	// retryAfter is sent as retry-after (ceil seconds) and retry-after-ms
	// when positive (Gemini: as a RetryInfo detail).
	retryAfter time.Duration
	// gmStatus is Gemini's status name when not the HTTP status's own.
	gmStatus string
	// quotaID and quotaMetric name the Gemini quota a rate limit broke,
	// limit its value.
	quotaID, quotaMetric string
	limit                float64
}

func errNotFound(method, path string) *apiError {
	return &apiError{status: 404, oaType: "invalid_request_error", anType: "not_found_error",
		message: fmt.Sprintf("Invalid URL (%s %s)", method, path), anMessage: "Not found"}
}

func errInvalid(param, msg string) *apiError {
	return &apiError{status: 400, oaType: "invalid_request_error", oaParam: param, anType: "invalid_request_error", message: msg}
}

func errTooLarge() *apiError {
	return &apiError{status: 413, oaType: "invalid_request_error", anType: "request_too_large",
		message: fmt.Sprintf("Request exceeds the maximum allowed number of bytes (%d).", maxBody)}
}

// errAuth echoes a masked form of the key sent, as OpenAI does; llmrun's
// tests use it to prove the key is redacted from everything it prints.
func errAuth(key string) *apiError {
	e := &apiError{status: 401, oaType: "invalid_request_error", oaCode: "invalid_api_key", anType: "authentication_error"}
	if key == "" {
		e.message = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
		e.anMessage = "x-api-key header is required"
		return e
	}
	e.message = "Incorrect API key provided: " + maskKey(key) + ". You can find your API key at https://platform.openai.com/account/api-keys."
	e.anMessage = "invalid x-api-key: " + maskKey(key)
	return e
}

// maskKey shows the first 8 and last 4 characters of a key (fewer for
// short keys) around "***", as OpenAI's 401 messages do.
func maskKey(key string) string {
	head, tail := 8, 4
	if len(key) < 16 {
		head, tail = len(key)/3, len(key)/4
	}
	return key[:head] + "***" + key[len(key)-tail:]
}

func errOutage() *apiError {
	return &apiError{status: 500, oaType: "server_error", anType: "api_error",
		message: "The server had an error while processing your request. Sorry about that!", anMessage: "Internal server error"}
}

func errOverloaded() *apiError {
	return &apiError{status: 503, anStatus: 529, oaType: "server_error", anType: "overloaded_error",
		message: "The engine is currently overloaded, please try again later.", anMessage: "Overloaded"}
}

func errServer() *apiError {
	return &apiError{status: 500, oaType: "server_error", anType: "api_error",
		message: "The server had an error while processing your request. Sorry about that!", anMessage: "Internal server error"}
}

func errQuota() *apiError {
	return &apiError{status: 429, oaType: "insufficient_quota", oaCode: "insufficient_quota",
		anType: "rate_limit_error", anDetailCode: "enforced_spend_limit_reached",
		message:   "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
		anMessage: "You have reached your API usage limits. You will regain access on the first day of next month at 00:00 UTC."}
}

func errRateLimited(ref *refusal, model string, inTokens int) *apiError {
	e := &apiError{status: 429, oaType: "tokens", oaCode: "rate_limit_exceeded", anType: "rate_limit_error", retryAfter: ref.wait}
	limit := formatLimit(ref.limit)
	e.limit = ref.limit
	switch ref.dim {
	case "requests":
		e.quotaID, e.quotaMetric = "GenerateRequestsPerMinutePerProjectPerModel", "generate_requests_per_model"
	case "input":
		e.quotaID, e.quotaMetric = "GenerateContentInputTokensPerModelPerMinute", "generate_content_input_token_count"
	case "output":
		e.quotaID, e.quotaMetric = "GenerateContentOutputTokensPerModelPerMinute", "generate_content_output_token_count"
	}
	switch ref.dim {
	case "concurrency":
		e.oaType = "requests"
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-mock on concurrent requests: Limit %s. Please try again in %s.", model, limit, ref.wait)
		e.anMessage = fmt.Sprintf("Number of concurrent connections has exceeded your rate limit of %s. Please try again later.", limit)
	case "requests":
		e.oaType = "requests"
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-mock on requests per min (RPM): Limit %s, Requested 1. Please try again in %s.", model, limit, ref.wait)
		e.anMessage = fmt.Sprintf("This request would exceed the rate limit for your organization of %s requests per minute.", limit)
	case "input":
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-mock on tokens per min (TPM): Limit %s, Requested %d. Please try again in %s.", model, limit, inTokens, ref.wait)
		e.anMessage = fmt.Sprintf("This request would exceed the rate limit for your organization of %s input tokens per minute.", limit)
	default:
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-mock on output tokens per min: Limit %s. Please try again in %s.", model, limit, ref.wait)
		e.anMessage = fmt.Sprintf("This request would exceed the rate limit for your organization of %s output tokens per minute.", limit)
	}
	return e
}

// formatLimit prints a per-minute limit as an integer when it is one.
func formatLimit(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
