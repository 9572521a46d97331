package providers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// elsewhere is a server on another port than the one the user named: it
// records everything that reaches it.
type elsewhere struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string // "METHOD path key=<auth headers> body=<body>"
}

func newElsewhere(t *testing.T) *elsewhere {
	e := &elsewhere{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.hits = append(e.hits, r.Method+" "+r.URL.Path+" key="+r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")+" body="+string(b))
		e.mu.Unlock()
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *elsewhere) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.hits...)
}

// redirector answers every request with status and a Location on target.
func redirector(t *testing.T, status int, target string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, target+r.URL.Path, status)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRedirectsNeverFollowed: whatever the 3xx and whatever the client's
// own redirect policy, no request reaches the Location, so neither the key
// (Authorization, x-api-key) nor the body leaves for a host the user did
// not name; the error names the Location and stops the run.
func TestRedirectsNeverFollowed(t *testing.T) {
	clients := map[string]*http.Client{
		"NewHTTPClient":       NewHTTPClient(1),
		"a following client":  {}, // Go's default policy follows up to 10 redirects
		"nil (DefaultClient)": nil,
	}
	calls := map[string]func(c *Config, url string) error{
		"Post": func(c *Config, url string) error {
			_, err := c.Post(t.Context(), url, http.Header{"Authorization": {"Bearer " + testKey}, "X-Api-Key": {testKey}}, []byte(`{"prompt":"secret prompt"}`))
			return err
		},
		"Do upload": func(c *Config, url string) error {
			_, err := c.Do(t.Context(), http.MethodPost, url, http.Header{"X-Api-Key": {testKey}, "Content-Type": {"text/plain"}}, strings.NewReader("secret file"))
			return err
		},
		"Get download": func(c *Config, url string) error {
			_, err := c.Get(t.Context(), url, http.Header{"Authorization": {"Bearer " + testKey}})
			return err
		},
	}
	for _, status := range []int{301, 302, 303, 307, 308} {
		target := newElsewhere(t)
		origin := redirector(t, status, target.URL)
		for cname, client := range clients {
			for call, do := range calls {
				t.Run(strconv.Itoa(status)+"/"+cname+"/"+call, func(t *testing.T) {
					cfg := &Config{APIKey: testKey, HTTPClient: client}
					err := do(cfg, origin.URL+"/v1/x")
					pe := wantClass(t, err, ClassRedirect)
					if pe.Status != status || !strings.Contains(pe.Message, target.URL+"/v1/x") || !strings.Contains(pe.Message, "base URL") {
						t.Errorf("error %+v", pe)
					}
					if pe.Class.Retryable() || !pe.Class.AbortsRun() {
						t.Error("a redirect must not be retried and must stop the run")
					}
					if got := target.seen(); len(got) != 0 {
						t.Fatalf("the redirect was followed: %q", got)
					}
				})
			}
		}
	}
}

// TestRedirectErrorRedacts: the message names the URLs without userinfo
// and without the key, even when the Location echoes it.
func TestRedirectErrorRedacts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://user:hunter2@evil.example/?key="+testKey)
		w.WriteHeader(http.StatusMovedPermanently)
	}))
	defer srv.Close()
	cfg := &Config{APIKey: testKey}
	u := strings.Replace(srv.URL, "http://", "http://me:pass@", 1)
	_, err := cfg.Post(t.Context(), u, nil, []byte(`{}`))
	pe := wantClass(t, err, ClassRedirect)
	for _, secret := range []string{testKey, testKey[:8], "hunter2", "pass@"} {
		if strings.Contains(pe.Error(), secret) {
			t.Errorf("%q leaked: %s", secret, pe.Error())
		}
	}
	if !strings.Contains(pe.Error(), "evil.example") {
		t.Errorf("Location not named: %s", pe.Error())
	}
}
