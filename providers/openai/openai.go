// Package openai is the OpenAI provider: Chat Completions, the Responses
// API and embeddings, for api.openai.com and the servers that speak its
// format (vLLM, Ollama, OpenRouter; Azure OpenAI through a Dialect).
//
// Streamed answers are reassembled into exactly the body a non-streaming
// call returns, so the output file does not depend on whether streaming was
// used, and the runner sees one Response shape either way.
package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmrun/llmrun/providers"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Provider sends Chat Completions, Responses and embeddings requests. It
// is safe for concurrent use: all of its fields are read-only after New.
type Provider struct {
	cfg providers.Config
	d   Dialect
	// wires holds one wire per providers.Endpoint.
	wires [3]providers.Wire
}

var _ providers.Provider = (*Provider)(nil)

// Dialect is how a server that speaks OpenAI's bodies differs from
// api.openai.com: its name, where each call goes, how it authenticates,
// and what its error bodies say beyond OpenAI's. The zero value is
// api.openai.com and the servers that copy it (vLLM, Ollama, OpenRouter).
type Dialect struct {
	// Name is what Provider.Name returns; "" is "openai".
	Name string
	// BaseURL is what Provider.BaseURL returns; "" is Config.BaseURL.
	BaseURL string
	// URL returns where req goes; nil posts to Config.BaseURL followed by
	// the endpoint's path without /v1 ("/chat/completions").
	URL func(req *providers.Request) string
	// Header holds the credential headers; nil sends "Authorization:
	// Bearer <key>", or nothing without a key.
	Header http.Header
	// Body adjusts a prepared body (Azure names the deployment in model);
	// it must not modify its input. Nil leaves bodies alone.
	Body func(body []byte) ([]byte, error)
	// Refine sharpens the classification of an error answer already read
	// as OpenAI's (Azure's content filter); nil adds nothing.
	Refine func(e *providers.Error)
}

// New returns a Provider for api.openai.com and compatible servers, posting
// to cfg.BaseURL + "/chat/completions" (and "/responses", "/embeddings").
func New(cfg providers.Config) *Provider { return NewDialect(cfg, Dialect{}) }

// NewDialect returns a Provider speaking d. A nil cfg.HTTPClient is
// replaced by providers.NewHTTPClient, once, so every Send shares one
// connection pool.
func NewDialect(cfg providers.Config, d Dialect) *Provider {
	cfg.SplitQuery() // the query goes on every request, after the path
	cfg.Ready()
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = providers.NewHTTPClient(0)
	}
	if d.Name == "" {
		d.Name = "openai"
	}
	if d.BaseURL == "" {
		d.BaseURL = cfg.BaseURL
	}
	p := &Provider{cfg: cfg, d: d}
	header := http.Header{"Content-Type": {"application/json"}}
	switch {
	case d.Header != nil:
		for k, v := range d.Header {
			header[k] = v
		}
	case cfg.APIKey != "":
		header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	for ep, w := range map[providers.Endpoint]providers.Wire{
		providers.EndpointChat:       {Prepare: p.prepare, ReadStream: p.readStream, ParsePlain: p.parsePlain},
		providers.EndpointResponses:  {Prepare: p.prepareResponses, ReadStream: p.readResponsesStream, ParsePlain: p.parseResponses},
		providers.EndpointEmbeddings: {Prepare: prepareEmbeddings, ReadStream: p.readEmbeddingsStream, ParsePlain: p.parseEmbeddings, BoundTokens: providers.EmbeddingsBound},
	} {
		w.URL = base + strings.TrimPrefix(ep.Path(), "/v1")
		w.Header = header
		w.RequestIDHeader = "X-Request-Id"
		w.StatusError = p.statusError
		if d.Body != nil {
			prepare := w.Prepare
			w.Prepare = func(b []byte) ([]byte, error) {
				b, err := prepare(b)
				if err != nil {
					return nil, err
				}
				return d.Body(b)
			}
		}
		p.wires[ep] = w
	}
	return p
}

// Name returns the dialect's name ("openai").
func (p *Provider) Name() string { return p.d.Name }

// Format returns providers.FormatOpenAI.
func (p *Provider) Format() providers.Format { return providers.FormatOpenAI }

// BaseURL returns the API root (the dialect's, for a dialect that has one).
func (p *Provider) BaseURL() string { return providers.StripUserinfo(p.d.BaseURL) }

// Send makes one attempt of req at its endpoint. It never retries. Errors
// are *providers.Error, except that a done ctx yields ctx.Err() itself.
func (p *Provider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	if int(req.Endpoint) >= len(p.wires) {
		return nil, &providers.Error{Class: providers.ClassInvalid, Message: "unknown endpoint " + req.Endpoint.String()}
	}
	w := &p.wires[req.Endpoint]
	if p.d.URL != nil {
		wc := *w
		wc.URL = p.d.URL(req)
		w = &wc
	}
	return p.cfg.Send(ctx, w, req)
}

// prepare sets the stream flags the configuration asks for. The caller's
// body is never modified (sjson copies), because retries resend it.
func (p *Provider) prepare(in []byte) ([]byte, error) {
	if p.cfg.Stream {
		return prepareStream(in)
	}
	out := in
	var err error
	for _, k := range [...]string{"stream", "stream_options"} { // stream_options is rejected without stream
		if err == nil && gjson.GetBytes(out, k).Exists() {
			out, err = sjson.DeleteBytes(out, k)
		}
	}
	return out, err
}

// statusError classifies a non-2xx answer: the status class, refined by
// the body's error.type/code (insufficient_quota stops the run: retrying
// cannot help until someone pays).
func (p *Provider) statusError(resp *http.Response) error {
	e := p.cfg.StatusError(resp, "x-request-id")
	fillError(e, gjson.ParseBytes(e.Body))
	if e.Message == "" && !gjson.ValidBytes(e.Body) {
		// A proxy's HTML or text page: its start is the best message there is.
		e.Message = strings.TrimSpace(string(e.Body[:min(len(e.Body), 200)]))
	}
	if e.Type == "insufficient_quota" || e.Code == "insufficient_quota" {
		e.Class = providers.ClassQuota
	}
	if p.d.Refine != nil {
		p.d.Refine(e)
	}
	providers.MarkDaily(e) // "on requests per day (RPD)": the day, not the minute, is spent
	return e
}

// fillError copies type, code and message from an OpenAI error body
// ({"error":{...}}), or from a top-level object as vLLM sends them.
func fillError(e *providers.Error, root gjson.Result) {
	obj := root.Get("error")
	if !obj.IsObject() {
		obj = root
	}
	e.Type = obj.Get("type").String()
	e.Code = obj.Get("code").String()
	e.Message = obj.Get("message").String()
}

// parsePlain reads a non-streaming answer. Body is kept as received.
func (p *Provider) parsePlain(b []byte, out *providers.Response) error {
	choices, err := p.parseAnswer(b, out, "choices")
	if err != nil {
		return err
	}
	out.Text = choices.Get("0.message.content").String()
	return nil
}

// parseAnswer reads the body, model and usage of a plain answer whose
// payload is the member key, and returns that member; an error object in
// its place is the failure it reports. The answer's members are read in
// one walk (the first of duplicate keys counts, as with gjson.Get), not
// one walk per member looked up.
func (p *Provider) parseAnswer(b []byte, out *providers.Response, key string) (gjson.Result, error) {
	root := providers.ParseBody(b)
	var payload, errObj, model, use gjson.Result
	first := func(r *gjson.Result, v gjson.Result) {
		if !r.Exists() {
			*r = v
		}
	}
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case key:
			first(&payload, v)
		case "error":
			first(&errObj, v)
		case "model":
			first(&model, v)
		case "usage":
			first(&use, v)
		}
		return true
	})
	if errObj.IsObject() && !payload.Exists() {
		return payload, providers.AnswerError(root, b, out, p.cfg.Secret(), fillError)
	}
	out.Body = b
	out.Model = model.String()
	out.Usage = usage(use)
	return payload, nil
}

// usage reads a usage object of any endpoint (plain, streamed and batch
// answers alike): Chat's and embeddings' prompt_tokens, or the Responses
// API's input_tokens, count every input token, the cached ones included.
func usage(u gjson.Result) providers.Usage {
	if in := u.Get("input_tokens"); in.Exists() {
		return providers.Usage{
			InputTokens:     in.Int(),
			OutputTokens:    u.Get("output_tokens").Int(),
			CacheReadTokens: u.Get("input_tokens_details.cached_tokens").Int(),
		}
	}
	return providers.Usage{
		InputTokens:     u.Get("prompt_tokens").Int(),
		OutputTokens:    u.Get("completion_tokens").Int(),
		CacheReadTokens: u.Get("prompt_tokens_details.cached_tokens").Int(),
	}
}

// readStream decodes an SSE answer into out. It stops at [DONE] without
// waiting for EOF; EOF before [DONE] is a failure, because the answer may
// be cut anywhere.
func (p *Provider) readStream(ctx context.Context, r io.Reader, out *providers.Response, start time.Time) error {
	var a assembler
	if err := p.cfg.ReadStream(ctx, r, out, start, &a, "[DONE]"); err != nil {
		return err
	}
	out.Body = a.body()
	out.Model = a.model()
	out.Text = a.text()
	out.Usage = usage(gjson.ParseBytes(a.usage))
	return nil
}

// Event reads one chunk; [DONE] ends the stream.
func (a *assembler) Event(_, data []byte) (bool, *providers.Error) {
	if isDone(data) {
		return true, nil
	}
	if len(data) == 0 {
		return false, nil
	}
	return false, a.chunk(data)
}

// Content reports whether a chunk carried output yet.
func (a *assembler) Content() bool { return a.content }

// isDone reports the [DONE] terminator (the SDKs match it as a prefix).
func isDone(data []byte) bool {
	return len(data) >= 6 && string(data[:6]) == "[DONE]"
}
