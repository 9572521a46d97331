// Package anthropic is the Messages API provider (and, in batch.go, the
// Message Batches client).
//
// Streamed answers are reassembled into exactly the message a
// non-streaming call returns, so the output file does not depend on whether
// streaming was used.
package anthropic

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/providers"
)

// apiVersion is the anthropic-version every request carries; the response
// shapes this package parses are those of this version.
const apiVersion = "2023-06-01"

// spendLimitPrefix starts the message of the 400 Anthropic returns when a
// self-set spend limit is reached: no retry helps until someone raises it.
const spendLimitPrefix = "You have reached your specified API usage limits"

// Provider sends Messages requests. It is safe for concurrent use: all of
// its fields are read-only after New.
type Provider struct {
	cfg  providers.Config
	wire providers.Wire
}

var _ providers.Provider = (*Provider)(nil)

// New returns a Provider posting to cfg.BaseURL + "/v1/messages" (cmd
// resolves the default base URL). A nil cfg.HTTPClient is replaced by
// providers.NewHTTPClient, once, so every Send shares one connection pool.
func New(cfg providers.Config) *Provider {
	cfg.SplitQuery() // the query goes on every request, after the path
	cfg.Ready()
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = providers.NewHTTPClient(0)
	}
	p := &Provider{cfg: cfg}
	p.wire = providers.Wire{
		URL:             strings.TrimRight(cfg.BaseURL, "/") + "/v1/messages",
		Header:          header(cfg.APIKey),
		RequestIDHeader: "Request-Id",
		StatusError:     p.statusError,
		Prepare:         p.prepare,
		ReadStream:      p.readStream,
		ParsePlain:      p.parsePlain,
	}
	return p
}

// header is the headers of every call: x-api-key when there is a key (a
// local server may take none), and the API version.
func header(key string) http.Header {
	h := http.Header{"Anthropic-Version": {apiVersion}, "Content-Type": {"application/json"}}
	if key != "" {
		h.Set("X-Api-Key", key)
	}
	return h
}

// Name returns "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Format returns providers.FormatAnthropic.
func (p *Provider) Format() providers.Format { return providers.FormatAnthropic }

// BaseURL returns the configured API root.
func (p *Provider) BaseURL() string { return providers.StripUserinfo(p.cfg.BaseURL) }

// Send makes one attempt of req. It never retries. Errors are *providers.Error,
// except that a done ctx yields ctx.Err() itself.
func (p *Provider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	return p.cfg.Send(ctx, &p.wire, req)
}

// prepare sets or removes the stream flag. The caller's body is never
// modified (sjson copies), because retries resend it.
func (p *Provider) prepare(in []byte) ([]byte, error) {
	if p.cfg.Stream {
		return sjson.SetBytes(in, "stream", true)
	}
	if gjson.GetBytes(in, "stream").Exists() {
		return sjson.DeleteBytes(in, "stream")
	}
	return in, nil
}

// statusError classifies a non-2xx answer (wire-formats §2.5, §2.6).
func (p *Provider) statusError(resp *http.Response) error {
	e := p.cfg.StatusError(resp, "request-id")
	root := gjson.ParseBytes(e.Body)
	fillError(e, root)
	if e.Message == "" && !gjson.ValidBytes(e.Body) {
		// Cloudflare's 413 page, a proxy's 502: the start is the best message.
		e.Message = strings.TrimSpace(string(e.Body[:min(len(e.Body), 200)]))
	}
	switch {
	case e.Code == "enforced_spend_limit_reached",
		e.Status == 402, e.Type == "billing_error",
		e.Status == 400 && strings.HasPrefix(e.Message, spendLimitPrefix):
		// Spend caps and billing: retrying fails until someone pays or
		// the month turns, so the run stops.
		e.Class = providers.ClassQuota
	case e.Status == 529, e.Type == "overloaded_error":
		e.Class = providers.ClassOverloaded
	}
	return e
}

// fillError copies an Anthropic error body ({"type":"error","error":{...},
// "request_id"}) into e; error.details.error_code lands in Code.
func fillError(e *providers.Error, root gjson.Result) {
	obj := root.Get("error")
	e.Type = obj.Get("type").String()
	e.Message = obj.Get("message").String()
	e.Code = obj.Get("details.error_code").String()
	if e.RequestID == "" {
		e.RequestID = root.Get("request_id").String()
	}
}

// parsePlain reads a non-streaming answer. Body is kept as received.
func (p *Provider) parsePlain(b []byte, out *providers.Response) error {
	root := providers.ParseBody(b)
	if root.Get("type").String() == "error" {
		return providers.AnswerError(root, b, out, p.cfg.Secret(), fillError)
	}
	out.Body = b
	out.Model = root.Get("model").String()
	var text strings.Builder
	root.Get("content").ForEach(func(_, block gjson.Result) bool {
		if block.Get("type").String() == "text" {
			text.WriteString(block.Get("text").String())
		}
		return true
	})
	out.Text = text.String()
	out.Usage = usage(root.Get("usage"))
	return nil
}

// usage reads a usage object (plain, streamed and batch answers alike).
// Anthropic's input_tokens excludes the cache; InputTokens totals all
// three, because cache writes and reads are input tokens too.
func usage(u gjson.Result) providers.Usage {
	read, write := u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
	return providers.Usage{
		InputTokens:      u.Get("input_tokens").Int() + write + read,
		OutputTokens:     u.Get("output_tokens").Int(),
		CacheReadTokens:  read,
		CacheWriteTokens: write,
	}
}

// readStream decodes an SSE answer into out. It stops at message_stop
// without waiting for EOF; EOF before message_stop is a failure.
func (p *Provider) readStream(ctx context.Context, r io.Reader, out *providers.Response, start time.Time) error {
	var a assembler
	if err := p.cfg.ReadStream(ctx, r, out, start, &a, "message_stop"); err != nil {
		return err
	}
	body, err := a.body()
	if err != nil {
		err.Status, err.RequestID = out.Status, out.RequestID
		return err
	}
	out.Body = body
	root := gjson.ParseBytes(body)
	out.Model = root.Get("model").String()
	out.Text = a.text()
	out.Usage = usage(root.Get("usage"))
	return nil
}

// Event reads one event; message_stop ends the stream.
func (a *assembler) Event(name, data []byte) (bool, *providers.Error) { return a.event(name, data) }

// Content reports whether a delta carried output yet.
func (a *assembler) Content() bool { return a.content }
