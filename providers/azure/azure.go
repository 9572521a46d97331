// Package azure is Azure OpenAI: OpenAI's bodies, streams and batch API
// (providers/openai) at an Azure resource's URLs, with the api-key header,
// a dated api-version on classic deployment URLs, and Azure's content
// filter errors (wire-formats §6).
//
// A base URL takes one of three forms:
//
//	https://NAME.openai.azure.com/openai/deployments/DEP?api-version=V   classic, one deployment
//	https://NAME.openai.azure.com  (with an api-version)                 classic, the model names the deployment
//	https://NAME.openai.azure.com/openai/v1  (or no api-version)         the v1 API, the model names the deployment
//
// The api-version comes from the URL's query, else Config.APIVersion
// (--api-version, else OPENAI_API_VERSION, as the official SDKs read it).
package azure

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/openai"
)

// Name is the provider's name.
const Name = "azure"

// Target is where an Azure base URL sends requests.
type Target struct {
	// root is ".../openai" (classic) or ".../openai/v1", without a query.
	root string
	// query holds the base URL's other query parameters and, on classic
	// URLs, api-version.
	query url.Values
	// V1 reports the v1 API: OpenAI's paths under /openai/v1, no dated
	// api-version, the deployment in the body's model.
	V1 bool
	// Deployment is the deployment the base URL names; "" when each
	// request's model names it.
	Deployment string
	// Version is the api-version sent ("" on v1 unless a preview).
	Version string
}

// Parse reads an Azure base URL and the api-version configured besides it
// (the URL's own api-version wins).
func Parse(baseURL, version string) (Target, error) {
	t, err := parse(baseURL, version)
	if err == nil && !t.V1 && t.Version == "" {
		err = fmt.Errorf("azure: deployment URLs need an api-version: set OPENAI_API_VERSION or pass --api-version (such as 2024-10-21), or use the v1 API (https://NAME.openai.azure.com/openai/v1)")
	}
	return t, err
}

// parse is Parse without the check that a classic URL has a version.
func parse(baseURL, version string) (Target, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return Target{}, fmt.Errorf("azure: the endpoint %q is not a URL like https://NAME.openai.azure.com", providers.StripUserinfo(baseURL))
	}
	q := u.Query()
	if v := strings.TrimSpace(q.Get("api-version")); v != "" {
		version = v
	}
	q.Del("api-version")
	version = strings.TrimSpace(version)
	t := Target{query: q}
	path := strings.TrimRight(u.EscapedPath(), "/")
	prefix, rest := path, ""
	if i := strings.Index(path+"/", "/openai/"); i >= 0 {
		prefix, rest = path[:i], path[i+len("/openai"):]
	}
	switch {
	case rest == "":
		// A bare resource endpoint: classic when a dated version is set,
		// v1 otherwise.
		t.V1 = version == "" || !dated(version)
	case rest == "/v1" || strings.HasPrefix(rest, "/v1/"):
		t.V1 = true
	case strings.HasPrefix(rest+"/", "/deployments/"):
		dep, _, _ := strings.Cut(strings.TrimPrefix(rest+"/", "/deployments/"), "/")
		if t.Deployment, err = url.PathUnescape(dep); err != nil || t.Deployment == "" {
			return Target{}, fmt.Errorf("azure: no deployment name in %q", providers.StripUserinfo(baseURL))
		}
	default:
		return Target{}, fmt.Errorf("azure: %q is not an Azure OpenAI path (want /openai/deployments/NAME or /openai/v1)", u.Path)
	}
	r := url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}
	t.root = r.String() + prefix + "/openai"
	if t.V1 {
		t.root += "/v1"
		if dated(version) {
			version = "" // the v1 API takes no dated version
		}
	}
	t.Version = version
	if version != "" {
		t.query.Set("api-version", version)
	}
	return t, nil
}

// dated reports an api-version such as 2024-10-21 (not "preview").
func dated(v string) bool { return v != "" && v[0] >= '0' && v[0] <= '9' }

// with is the URL of path (which may carry a query) under the root, with
// the base URL's query (api-version) added.
func (t Target) with(path string) string {
	p, rawq, _ := strings.Cut(path, "?")
	q, _ := url.ParseQuery(rawq)
	for k, v := range t.query {
		q[k] = v
	}
	if len(q) == 0 {
		return t.root + p
	}
	return t.root + p + "?" + encode(q)
}

// encode is url.Values.Encode with api-version last, as people write it.
func encode(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if (keys[i] == "api-version") != (keys[j] == "api-version") {
			return keys[j] == "api-version"
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for _, k := range keys {
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(v))
		}
	}
	return b.String()
}

// URL is where a request to endpoint ep for model goes: on classic URLs
// chat and embeddings are deployment-scoped (the deployment named by the
// base URL, else the model), Responses resource-scoped with the deployment
// in the body; on v1, OpenAI's paths.
func (t Target) URL(ep providers.Endpoint, model string) string {
	path := strings.TrimPrefix(ep.Path(), "/v1")
	if t.V1 || ep == providers.EndpointResponses {
		return t.with(path)
	}
	dep := t.Deployment
	if dep == "" {
		dep = model
	}
	return t.with("/deployments/" + url.PathEscape(dep) + path)
}

// BaseURL is the canonical form of the base URL, api-version included, so
// that a record of it (the budget key, a batch's state) reaches the same
// deployment with the same version.
func (t Target) BaseURL() string {
	if t.Deployment != "" {
		return t.with("/deployments/" + url.PathEscape(t.Deployment))
	}
	return t.with("")
}

// Check reports whether cfg names a usable Azure endpoint.
func Check(cfg providers.Config) error {
	_, err := Parse(cfg.BaseURL, cfg.APIVersion)
	return err
}

// Deployment is the deployment a base URL names (the model every request
// to it is sent as, and the budget's model key), or "".
func Deployment(baseURL string) string {
	t, err := parse(baseURL, "")
	if err != nil {
		return ""
	}
	return t.Deployment
}

// header is Azure's key header. openai-go's azure.WithAPIKey sends it
// alone, without Authorization.
// Without a key (--no-auth behind a gateway) it sends none.
func header(key string) http.Header {
	if key == "" {
		return http.Header{}
	}
	return http.Header{"Api-Key": {key}}
}

// setModel returns a function that names the deployment in a body's model.
func setModel(dep string) func([]byte) ([]byte, error) {
	if dep == "" {
		return nil
	}
	return func(b []byte) ([]byte, error) {
		if gjson.GetBytes(b, "model").Str == dep {
			return b, nil
		}
		return sjson.SetBytes(b, "model", dep)
	}
}

// New returns the live client for cfg. A base URL Check rejects yields a
// client whose every request fails with Check's error (the registry checks
// first, so a run never starts with one).
func New(cfg providers.Config) providers.Provider {
	t, err := Parse(cfg.BaseURL, cfg.APIVersion)
	if err != nil {
		return broken{cfg.BaseURL, err}
	}
	return openai.NewDialect(cfg, openai.Dialect{
		Name:    Name,
		BaseURL: t.BaseURL(),
		URL:     func(req *providers.Request) string { return t.URL(req.Endpoint, req.Model) },
		Header:  header(cfg.APIKey),
		Body:    setModel(t.Deployment),
		Refine:  refine,
	})
}

// NewBatch returns the batch API client for cfg: OpenAI's batch API under
// /openai (files and batches are resource-scoped; the body's model names
// the Global-Batch deployment).
func NewBatch(cfg providers.Config) providers.BatchClient {
	t, err := Parse(cfg.BaseURL, cfg.APIVersion)
	if err != nil {
		t = Target{root: strings.TrimRight(cfg.BaseURL, "/")}
	}
	return openai.NewBatchDialect(cfg, openai.BatchDialect{
		Name:    Name,
		BaseURL: t.BaseURL(),
		URL:     t.with,
		Header:  header(cfg.APIKey),
		Body:    setModel(t.Deployment),
	})
}

// broken is the client of a base URL that cannot work.
type broken struct {
	base string
	err  error
}

func (b broken) Name() string             { return Name }
func (b broken) Format() providers.Format { return providers.FormatOpenAI }
func (b broken) BaseURL() string          { return providers.StripUserinfo(b.base) }
func (b broken) Send(context.Context, *providers.Request) (*providers.Response, error) {
	return nil, &providers.Error{Class: providers.ClassInvalid, Message: b.err.Error(), Err: b.err}
}

// retryAfterText finds Azure's "Please retry after 6 seconds." in a 429
// message that came without a retry-after header.
var retryAfterText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)retry after (\d+(?:\.\d+)?) seconds?`) })

// refine reads what Azure's error bodies say beyond OpenAI's: a prompt
// refused by the content filter (400 content_filter, with the categories
// that tripped it in innererror) is named as such and never retried; a 429
// without a retry-after header takes its hint from the message.
func refine(e *providers.Error) {
	body := gjson.ParseBytes(e.Body).Get("error")
	inner := body.Get("innererror")
	if e.Code == "content_filter" || inner.Get("code").Str == "ResponsibleAIPolicyViolation" {
		e.Class, e.Code = providers.ClassInvalid, "content_filter"
		what := "the prompt"
		if p := body.Get("param").Str; p != "" && p != "prompt" {
			what = p
		}
		e.Message = fmt.Sprintf("Azure's content filter refused %s%s; not retried (change the prompt, or the deployment's content filter): %s",
			what, filterCategories(inner.Get("content_filter_result")), e.Message)
		return
	}
	if e.Class == providers.ClassRateLimited && !e.HasRetryAfter {
		if m := retryAfterText().FindStringSubmatch(e.Message); m != nil {
			if f, err := strconv.ParseFloat(m[1], 64); err == nil {
				e.RetryAfter, e.HasRetryAfter = min(time.Duration(f*float64(time.Second)), providers.MaxRetryAfter), true
			}
		}
	}
}

// filterCategories lists the categories a content filter result flagged:
// " (sexual: high, jailbreak: detected)", or "".
func filterCategories(r gjson.Result) string {
	var hits []string
	r.ForEach(func(k, v gjson.Result) bool {
		switch {
		case v.Get("filtered").Bool() && v.Get("severity").Str != "":
			hits = append(hits, k.Str+": "+v.Get("severity").Str)
		case v.Get("filtered").Bool() || v.Get("detected").Bool():
			hits = append(hits, k.Str+": detected")
		}
		return true
	})
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return " (" + strings.Join(hits, ", ") + ")"
}
