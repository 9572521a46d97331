package providers

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
)

// This file builds and sends Post's requests without the per-request work
// http.NewRequest and http.Client.Do repeat for every attempt: the URL is
// parsed and the header merged once per endpoint (Ready), and the request
// goes straight to the client's transport, as Client.Do would send it when
// redirects are refused and the client has no jar and no timeout.

// Ready readies c for sending: requests to the same URL with the same
// wire header reuse one parsed URL and one merged header. Providers call
// it when they are built (after SplitQuery); a Config that is not ready
// still sends, building both for each request.
func (c *Config) Ready() {
	if c.targets == nil {
		c.targets = &targets{}
	}
}

// targets caches, per endpoint URL and wire header, what every request to
// it carries. The map is replaced, never modified, so lookups take no
// lock; at most maxTargets are kept (Gemini's URL names the model).
type targets struct {
	m  atomic.Pointer[map[targetKey]*target]
	mu sync.Mutex // serializes replacements
}

const maxTargets = 256

// targetKey is a URL and the identity of a wire's header map (wires build
// theirs once and never change it).
type targetKey struct {
	url    string
	header uintptr
}

// target is one endpoint's parsed URL (with Config.Query) and merged
// header. Neither is ever modified: every request shares them, and
// transports do not modify a request's URL or header.
type target struct {
	u      *url.URL
	header http.Header
}

// target returns rawURL's and header's target, built once when c is ready.
func (c *Config) target(rawURL string, header http.Header) (*target, error) {
	if c.targets == nil {
		return c.newTarget(rawURL, header)
	}
	key := targetKey{rawURL, reflect.ValueOf(header).Pointer()}
	if m := c.targets.m.Load(); m != nil {
		if t := (*m)[key]; t != nil {
			return t, nil
		}
	}
	t, err := c.newTarget(rawURL, header)
	if err != nil {
		return nil, err
	}
	c.targets.mu.Lock()
	defer c.targets.mu.Unlock()
	old := c.targets.m.Load()
	if old != nil && len(*old) >= maxTargets {
		return t, nil
	}
	m := make(map[targetKey]*target, 1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[key] = t
	c.targets.m.Store(&m)
	return t, nil
}

// newTarget parses rawURL and merges the headers of a request to it: the
// wire's, a JSON Content-Type unless it names one, the User-Agent and
// c.Header over them.
func (c *Config) newTarget(rawURL string, header http.Header) (*target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	u.Host = removeEmptyPort(u.Host)
	c.addQuery(u)
	h := header.Clone()
	if h == nil {
		h = make(http.Header, 2)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	if c.UserAgent != "" {
		h.Set("User-Agent", c.UserAgent)
	}
	for k, vs := range c.Header {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return &target{u: u, header: h}, nil
}

// request is the POST of src's bytes to t on ctx, as
// http.NewRequestWithContext builds it, minus the parse: the URL and
// header are t's, shared.
func (t *target) request(ctx context.Context, src *bodyReader) *http.Request {
	body := src.b
	r := http.Request{
		Method:        http.MethodPost,
		URL:           t.u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        t.header,
		Body:          src,
		ContentLength: int64(len(body)),
		Host:          t.u.Host,
	}
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	r.GetBody = func() (io.ReadCloser, error) { return newBodyReader(body), nil }
	return r.WithContext(ctx)
}

func newBodyReader(b []byte) *bodyReader { return &bodyReader{r: *bytes.NewReader(b), b: b} }

// bodyReader is a request body with a no-op Close and a WriteTo, as
// NewRequest wraps a *bytes.Reader.
type bodyReader struct {
	r bytes.Reader
	b []byte
}

func (b *bodyReader) Read(p []byte) (int, error)            { return b.r.Read(p) }
func (b *bodyReader) WriteTo(w io.Writer) (int64, error)    { return b.r.WriteTo(w) }
func (b *bodyReader) Close() error                          { return nil }
func (b *bodyReader) Len() int                              { return b.r.Len() }
func (b *bodyReader) Seek(o int64, w int) (int64, error)    { return b.r.Seek(o, w) }
func (b *bodyReader) ReadAt(p []byte, o int64) (int, error) { return b.r.ReadAt(p, o) }

// removeEmptyPort strips the empty port of "host:", as NewRequest does.
func removeEmptyPort(host string) string {
	if strings.LastIndex(host, ":") > strings.LastIndex(host, "]") {
		return strings.TrimSuffix(host, ":")
	}
	return host
}

// roundTrip sends req, with the User-Agent and extra headers, on
// c.HTTPClient (http.DefaultClient when nil) with redirects refused,
// whatever that client's own policy: the copy shares its transport, so
// its connection pool too.
func (c *Config) roundTrip(req *http.Request) (*http.Response, error) {
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	for k, vs := range c.Header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	c.addQuery(req.URL)
	return c.do(req)
}

// do sends req, complete, as c.HTTPClient.Do would with redirects refused.
// A client without a cookie jar or an overall timeout adds nothing but
// its error wrapping to its transport's round trip (a refused redirect
// returns the 3xx itself), so req goes straight to the transport and a
// failure is wrapped as Do wraps it (*url.Error, "Post \"URL\": ...").
// Other clients, and URLs with userinfo (Do sends them as Basic auth),
// go through Do.
func (c *Config) do(req *http.Request) (*http.Response, error) {
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if hc.Jar != nil || hc.Timeout > 0 || req.URL.User != nil {
		cc := *hc
		cc.CheckRedirect = refuseRedirect
		return cc.Do(req)
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
	}
	if resp == nil {
		err := fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return resp, nil
}

// urlErrorOp is net/http's Op of a *url.Error: "Post" for POST.
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	if lower := strings.ToLower(method); method != lower {
		return method[:1] + lower[1:]
	}
	return method
}
