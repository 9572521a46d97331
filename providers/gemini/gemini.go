// Package gemini is the provider of Google's Gemini API (the native
// generateContent and embedContent endpoints of
// generativelanguage.googleapis.com, not its OpenAI-compatible layer), and
// in batch.go its Batch API client.
//
// Streamed answers are reassembled into exactly the response a
// non-streaming call returns, so the output file does not depend on
// whether streaming was used. Errors are google.rpc Status bodies,
// classified by HTTP status refined by the canonical status name and
// details (wire-formats §5.5).
package gemini

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/providers"
)

// Name is the provider's name, as --provider and output lines spell it.
const Name = "gemini"

// DefaultBaseURL is the API root every path below is relative to.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// requestIDHeader is where a request id is looked for. Google's front end
// sends none; proxies in front of it often do. Without it the answer's
// responseId stands in.
const requestIDHeader = "X-Request-Id"

// Provider sends generateContent and embeddings requests. It is safe for concurrent use:
// all of its fields are read-only after New.
type Provider struct {
	cfg  providers.Config
	wire providers.Wire // URL is set per request (the model is in it)
	base string
}

var _ providers.Provider = (*Provider)(nil)

// New returns a Provider posting to cfg.BaseURL + "/models/{model}:…"
// (a bare host gets /v1beta) with the key in x-goog-api-key. A nil cfg.HTTPClient is replaced by
// providers.NewHTTPClient, once, so every Send shares one connection pool.
func New(cfg providers.Config) *Provider {
	cfg.SplitQuery() // ?key= goes on every request, after the path
	cfg.Ready()
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = providers.NewHTTPClient(0)
	}
	p := &Provider{cfg: cfg, base: apiRoot(cfg.BaseURL)}
	p.wire = providers.Wire{
		Header:          header(cfg.APIKey),
		RequestIDHeader: requestIDHeader,
		StatusError:     p.statusError,
		ReadStream:      p.readStream,
		ParsePlain:      p.parsePlain,
	}
	return p
}

// header carries the key, if any (a local server may take none).
func header(key string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if key != "" {
		h.Set("X-Goog-Api-Key", key)
	}
	return h
}

// apiVersion is the API version a base URL without a path gets, as
// Google's SDKs add it to GOOGLE_GEMINI_BASE_URL.
const apiVersion = "v1beta"

// apiRoot is base without a trailing slash, with /v1beta added when base
// is a bare host.
func apiRoot(base string) string {
	base = strings.TrimRight(base, "/")
	if u, err := url.Parse(base); err == nil && u.Host != "" && u.Path == "" {
		return base + "/" + apiVersion
	}
	return base
}

// Name returns "gemini".
func (p *Provider) Name() string { return Name }

// Format returns providers.FormatGemini.
func (p *Provider) Format() providers.Format { return providers.FormatGemini }

// BaseURL returns the configured API root.
func (p *Provider) BaseURL() string { return providers.StripUserinfo(p.cfg.BaseURL) }

// Send makes one attempt of req. It never retries. Errors are
// *providers.Error, except that a done ctx yields ctx.Err() itself.
func (p *Provider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	switch req.Endpoint {
	case providers.EndpointChat:
	case providers.EndpointEmbeddings:
		return p.sendEmbed(ctx, req)
	default:
		return nil, &providers.Error{Class: providers.ClassInvalid, Message: "the " + req.Endpoint.String() + " endpoint is not supported on Gemini (chat and embeddings only)"}
	}
	body, model, err := prepare(req.Body)
	if err != nil {
		return nil, &providers.Error{Class: providers.ClassInvalid, Message: "request body: " + err.Error(), Err: err}
	}
	w := p.wire
	w.URL = p.base + "/" + model + ":generateContent"
	if p.cfg.Stream {
		w.URL = p.base + "/" + model + ":streamGenerateContent?alt=sse"
	}
	resp, err := p.cfg.Exchange(ctx, &w, body, req.MaxTokens)
	if resp != nil && resp.Model == "" {
		resp.Model = strings.TrimPrefix(model, "models/")
	}
	return resp, err
}

// modelPattern is a model resource name that can go in a URL as it is:
// "gemini-2.5-flash", "models/gemini-2.5-flash", "tunedModels/my-model-1".
var modelPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z]+/)?[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// bodyOnly are llmrun's own members of a Gemini body, which the API does
// not take: the model goes in the URL, and streaming is the URL's choice.
var bodyOnly = [...]string{"model", "stream", "stream_options"}

// prepare checks a body and returns it without the members the API does
// not take, with the model's resource name. The caller's body is never
// modified (sjson copies): retries resend it.
func prepare(in []byte) (out []byte, model string, err error) {
	if !gjson.ValidBytes(in) {
		return nil, "", providers.ErrInvalidJSON
	}
	m := gjson.GetBytes(in, "model")
	if m.Type != gjson.String || m.Str == "" {
		return nil, "", fmt.Errorf("no model (Gemini bodies name it in %q, which llmrun moves into the URL)", "model")
	}
	if !modelPattern().MatchString(m.Str) {
		return nil, "", fmt.Errorf("model %q is not a model name", m.Str)
	}
	model = m.Str
	if !strings.Contains(model, "/") {
		model = "models/" + model
	}
	out = in
	for _, k := range bodyOnly {
		if err == nil && gjson.GetBytes(out, k).Exists() {
			out, err = sjson.DeleteBytes(out, k)
		}
	}
	return out, model, err
}

// parsePlain reads a non-streaming answer. Body is kept as received.
func (p *Provider) parsePlain(b []byte, out *providers.Response) error {
	root := gjson.ParseBytes(b)
	if e := root.Get("error"); e.IsObject() && !root.Get("candidates").Exists() {
		return providers.AnswerError(root, b, out, p.cfg.Secret(), fillError)
	}
	return p.fill(root, b, out, func() string { return plainText(root) })
}

// plainText is the answer's text: the first candidate's text parts, not
// its thoughts.
func plainText(root gjson.Result) string {
	var text strings.Builder
	root.Get("candidates.0.content.parts").ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String && !part.Get("thought").Bool() {
			text.WriteString(t.Str)
		}
		return true
	})
	return text.String()
}

// fill fills out from a whole answer b (plain, or reassembled from a
// stream), parsed as root, with its text; a blocked prompt is the error.
func (p *Provider) fill(root gjson.Result, b []byte, out *providers.Response, text func() string) error {
	if err := blocked(root, out, b); err != nil {
		err.Body = providers.Redact(err.Body, p.cfg.Secret())
		return err
	}
	out.Body = b
	out.Model = root.Get("modelVersion").Str
	if out.RequestID == "" {
		out.RequestID = root.Get("responseId").Str
	}
	out.Text = text()
	out.Usage = usage(root.Get("usageMetadata"))
	return nil
}

// blocked is the error of an answer whose prompt was blocked: HTTP 200
// with promptFeedback.blockReason and no candidates. The prompt itself is
// refused, so it is an invalid request, never retried.
func blocked(root gjson.Result, out *providers.Response, body []byte) *providers.Error {
	reason := root.Get("promptFeedback.blockReason").Str
	if reason == "" || len(root.Get("candidates").Array()) > 0 {
		return nil
	}
	msg := "the prompt was blocked (" + reason + ")"
	if m := root.Get("promptFeedback.blockReasonMessage").Str; m != "" {
		msg += ": " + m
	}
	return &providers.Error{Class: providers.ClassInvalid, Status: out.Status, RequestID: out.RequestID,
		Type: "PROMPT_BLOCKED", Code: reason, Message: msg, Body: append([]byte(nil), body...)}
}

// usage reads usageMetadata (plain, streamed and batch answers alike).
// promptTokenCount includes the cached tokens; thinking is billed as
// output; tool-use prompts are input. Missing counters are 0.
func usage(u gjson.Result) providers.Usage {
	return providers.Usage{
		InputTokens:     u.Get("promptTokenCount").Int() + u.Get("toolUsePromptTokenCount").Int(),
		OutputTokens:    u.Get("candidatesTokenCount").Int() + u.Get("thoughtsTokenCount").Int(),
		CacheReadTokens: u.Get("cachedContentTokenCount").Int(),
	}
}

// readStream decodes an alt=sse answer into out. Gemini's stream has no
// terminator event: it ends at EOF, complete once a candidate carried a
// finishReason (or the prompt was blocked). EOF before that is a cut.
func (p *Provider) readStream(ctx context.Context, r io.Reader, out *providers.Response, start time.Time) error {
	var a assembler
	if err := p.cfg.ReadStream(ctx, r, out, start, &a, "a finishReason"); err != nil {
		return err
	}
	body := a.body()
	return p.fill(gjson.ParseBytes(body), body, out, a.text)
}

// Event reads one chunk; the stream has no terminator event.
func (a *assembler) Event(_, data []byte) (bool, *providers.Error) {
	if len(data) == 0 {
		return false, nil
	}
	return false, a.chunk(data)
}

// Content reports whether a candidate carried output yet.
func (a *assembler) Content() bool { return a.content }

// Complete reports, at EOF, whether a candidate finished (or the prompt
// was blocked).
func (a *assembler) Complete() bool { return a.finished }
