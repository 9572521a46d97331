package job

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/ctxsleep"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
)

// tokenCounter is a provider's free token-counting endpoint, asked one
// request at a time (count_tokens has its own, small, rate limits): a 429
// waits its retry-after (at most maxCountWait) and is asked again, twice
// at most; a response saying no requests remain waits for its reset.
type tokenCounter struct {
	client *http.Client
	build  func(req *providers.Request) (*http.Request, error)
	parse  string // the count's member in the response
	sleep  func(context.Context, time.Duration) error
}

// maxCountWait bounds one wait for the counting endpoint's limits.
const maxCountWait = 30 * time.Second

// newTokenCounter returns the counting endpoint of provider at base with
// key, nil for a provider without one (OpenAI has none: its tokenizer is
// local and exact).
func newTokenCounter(provider, base, key string) *tokenCounter {
	c := &tokenCounter{client: providers.NewHTTPClient(1), sleep: sleepCtx}
	switch provider {
	case "anthropic":
		u := strings.TrimRight(base, "/") + "/v1/messages/count_tokens"
		c.parse = "input_tokens"
		c.build = func(req *providers.Request) (*http.Request, error) {
			r, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(anthropicCountBody(req.Body)))
			if err == nil {
				r.Header.Set("x-api-key", key)
				r.Header.Set("anthropic-version", "2023-06-01")
			}
			return r, err
		}
	case "gemini":
		root := strings.TrimRight(base, "/")
		if pu, err := url.Parse(root); err == nil && pu.Host != "" && pu.Path == "" {
			root += "/v1beta"
		}
		c.parse = "totalTokens"
		c.build = func(req *providers.Request) (*http.Request, error) {
			model := strings.TrimPrefix(req.Model, "models/")
			body := []byte(`{"generateContentRequest":{"model":` + strconv.Quote("models/"+model))
			if b := bytes.TrimSpace(req.Body); len(b) > 2 {
				body = append(append(body, ','), b[1:]...)
				body = append(body, '}')
			} else {
				body = append(body, "}}"...)
			}
			r, err := http.NewRequest(http.MethodPost, root+"/models/"+url.PathEscape(model)+":countTokens", bytes.NewReader(body))
			if err == nil {
				r.Header.Set("x-goog-api-key", key)
			}
			return r, err
		}
	default:
		return nil
	}
	return c
}

// counterFor is the counting endpoint for an estimate of entry's requests,
// nil when there is none or no key to ask it with.
func counterFor(entry *registry.Entry, baseFlag string, getenv func(string) string) *tokenCounter {
	key := entry.Key(getenv)
	if key == "" {
		return nil
	}
	return newTokenCounter(entry.Name, entry.BaseURL(baseFlag, getenv), key)
}

// anthropicCountBody is a Messages body with only what count_tokens takes.
func anthropicCountBody(body []byte) []byte {
	out := []byte{'{'}
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model", "messages", "system", "tools", "tool_choice", "thinking":
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(append(out, k.Raw...), ':'), v.Raw...)
		}
		return true
	})
	return append(out, '}')
}

// CountTokens implements forecast.TokenCounter.
func (c *tokenCounter) CountTokens(ctx context.Context, req *providers.Request) (int64, error) {
	for attempt := 0; ; attempt++ {
		r, err := c.build(req)
		if err != nil {
			return 0, err
		}
		resp, err := c.client.Do(r.WithContext(ctx))
		if err != nil {
			if ue, ok := err.(*url.Error); ok {
				err = ue.Err // its URL may carry userinfo
			}
			return 0, fmt.Errorf("counting tokens: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("counting tokens: %w", err)
		}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < 2 {
			if err := c.sleep(ctx, retryAfter(resp.Header)); err != nil {
				return 0, err
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("counting tokens: HTTP %d: %s", resp.StatusCode, snippet(b))
		}
		n := gjson.GetBytes(b, c.parse)
		if n.Type != gjson.Number {
			return 0, fmt.Errorf("counting tokens: no %s in the answer: %s", c.parse, snippet(b))
		}
		if resp.Header.Get("anthropic-ratelimit-requests-remaining") == "0" {
			if t, err := time.Parse(time.RFC3339, resp.Header.Get("anthropic-ratelimit-requests-reset")); err == nil {
				if err := c.sleep(ctx, min(time.Until(t), maxCountWait)); err != nil {
					return 0, err
				}
			}
		}
		return n.Int(), nil
	}
}

// retryAfter is a 429's retry-after, 1s if none, at most maxCountWait.
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.ParseFloat(h.Get("retry-after"), 64); err == nil && s > 0 {
		return min(time.Duration(s*float64(time.Second)), maxCountWait)
	}
	return time.Second
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d > 0 && !ctxsleep.For(ctx, d) {
		return ctx.Err()
	}
	return nil
}
