package providers

import (
	"encoding/base64"
	"net/url"
	"sort"
	"strings"
)

// SplitQuery moves the query string of c.BaseURL (Gemini's ?key=, an API
// gateway's subscription-key=) into c.Query, so request paths are joined
// to the base URL's path and the query is sent on every request (see
// roundTrip) instead of being spliced before the path. Providers call it
// when they are built; Azure parses its own query first.
func (c *Config) SplitQuery() {
	base, q, ok := strings.Cut(c.BaseURL, "?")
	if !ok {
		return
	}
	c.BaseURL = base
	if v, err := url.ParseQuery(q); err == nil && len(v) > 0 {
		if c.Query == nil {
			c.Query = url.Values{}
		}
		for k, vs := range v {
			c.Query[k] = append(c.Query[k], vs...)
		}
	}
}

// addQuery adds c.Query to u, keeping any parameter u already has.
func (c *Config) addQuery(u *url.URL) {
	if len(c.Query) == 0 {
		return
	}
	q := u.Query()
	for k, vs := range c.Query {
		if _, ok := q[k]; !ok {
			q[k] = vs
		}
	}
	u.RawQuery = q.Encode()
}

// minHeaderSecret is the shortest value of an ordinary header (one whose
// name does not say credential) treated as a secret: shorter ones
// ("true", "v2") would mangle every message they occur in.
const minHeaderSecret = 8

// Credentials lists every credential c sends besides APIKey, as they may
// come back in an answer: extra header values (--header, config headers),
// the base URL's userinfo (Go sends it as Basic auth: the password, the
// pair and their base64) and its query values, raw and escaped. Nothing
// shorter than 4 bytes is listed.
func (c *Config) Credentials() []string {
	var out []string
	add := func(s string, least int) {
		if len(s) >= least && !strings.Contains(s, "\n") {
			out = append(out, s)
		}
	}
	for name, vs := range c.Header {
		least := minHeaderSecret
		if credentialName(name) {
			least = 4
		}
		for _, v := range vs {
			add(strings.TrimSpace(v), least)
			if scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " "); ok && len(scheme) < 10 {
				add(strings.TrimSpace(tok), least) // "Bearer tok": the token alone
			}
		}
	}
	if u, err := url.Parse(c.BaseURL); err == nil && u.User != nil {
		pass, _ := u.User.Password()
		add(pass, 4)
		add(url.QueryEscape(pass), 4)
		pair := u.User.Username() + ":" + pass
		add(base64.StdEncoding.EncodeToString([]byte(pair)), 4)
		if pass != "" {
			add(pair, 4)
		}
	}
	for _, vs := range c.Query {
		for _, v := range vs {
			add(v, 4)
			add(url.QueryEscape(v), 4)
		}
	}
	// Longest first, so a secret that contains another goes whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// credentialName reports whether a header's name says its value is a
// credential.
func credentialName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "password", "signature", "session"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Secret is what Redact and RedactString take to remove every credential
// c sends: the API key, then the others (Credentials), one a line.
func (c *Config) Secret() string {
	creds := c.Credentials()
	if len(creds) == 0 {
		return c.APIKey
	}
	return c.APIKey + "\n" + strings.Join(creds, "\n")
}

// maskQuery masks every query value of the URL s but api-version and alt
// ("?key=***"): Gemini's key= and a gateway's subscription-key= are
// credentials. A string without a query is returned as it is.
func maskQuery(s string) string {
	base, q, ok := strings.Cut(s, "?")
	if !ok || q == "" {
		return s
	}
	frag := ""
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q, frag = q[:i], q[i:]
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if k != "api-version" && k != "alt" {
			parts[i] = k + "=***"
		}
	}
	return base + "?" + strings.Join(parts, "&") + frag
}
