package registry

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/mock"
)

// mockKey is the key sent to the in-process mock, which takes any.
const mockKey = "mock-key"

// Set builds the clients of one run from the table: it reads keys and
// endpoints from the environment, shares one configuration (HTTP client,
// timeouts, streaming) and starts the built-in mock at most once. Close
// stops the mock. A Set is safe for concurrent use.
type Set struct {
	getenv func(string) string
	cfg    providers.Config
	noAuth bool

	mu      sync.Mutex
	mock    *http.Server
	mockURL string
}

// NewSet returns a Set reading the environment through getenv and
// building every client from cfg (its BaseURL and APIKey are filled per
// entry).
func NewSet(getenv func(string) string, cfg providers.Config) *Set {
	return &Set{getenv: getenv, cfg: cfg}
}

// SendNoKey makes every client of the Set send no API key, whatever the
// environment holds (--no-auth: a server with no auth, or one a --header
// authenticates to). Call it before building clients.
func (s *Set) SendNoKey() { s.noAuth = true }

// Provider builds e's live client at baseURL ("" for the environment's or
// the default).
func (s *Set) Provider(e Entry, baseURL string) (providers.Provider, error) {
	return s.ProviderAt(e, Endpoint{BaseURL: baseURL})
}

// Endpoint is where and how one route's client talks, when a config
// file's named endpoint says more than the entry: its own base URL, the
// environment variable of its own key, its api-version and its headers
// (added over the shared ones). Zero fields keep the entry's.
type Endpoint struct {
	BaseURL, KeyEnv, APIVersion string
	Header                      http.Header
}

// ProviderAt builds e's live client at endpoint at.
func (s *Set) ProviderAt(e Entry, at Endpoint) (providers.Provider, error) {
	cfg, err := s.config(e, at)
	if err != nil {
		return nil, err
	}
	return e.New(cfg), nil
}

// Batch builds e's batch API client at baseURL ("" for the environment's
// or the default).
func (s *Set) Batch(e Entry, baseURL string) (providers.BatchClient, error) {
	return s.BatchAt(e, Endpoint{BaseURL: baseURL})
}

// BatchAt builds e's batch API client at endpoint at.
func (s *Set) BatchAt(e Entry, at Endpoint) (providers.BatchClient, error) {
	if e.NewBatch == nil {
		return nil, fmt.Errorf("provider %s has no batch API", e.Name)
	}
	cfg, err := s.config(e, at)
	if err != nil {
		return nil, err
	}
	// A batch client neither streams nor bounds the gaps of a download.
	cfg.Stream, cfg.IdleTimeout = false, 0
	return e.NewBatch(cfg), nil
}

// ConfigError says a provider cannot work as configured (no endpoint, an
// endpoint it cannot use): nothing was sent.
type ConfigError struct {
	Provider string
	Err      error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// MissingKeyError says a provider needs an API key and none is set.
type MissingKeyError struct {
	Provider string
	Vars     []string // the environment variables that may hold it
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("%s is not set (try --provider mock for a dry run against the built-in mock, or --no-auth for a server that takes no key)", strings.Join(e.Vars, " or "))
}

// config fills the shared configuration with e's endpoint, API version
// and key, and has e check it.
func (s *Set) config(e Entry, at Endpoint) (cfg providers.Config, err error) {
	cfg = s.cfg
	cfg.Headers = e.Headers
	baseURL := at.BaseURL
	if at.KeyEnv != "" {
		e.KeyEnv = []string{at.KeyEnv}
	}
	if at.APIVersion != "" {
		cfg.APIVersion = at.APIVersion
	}
	if len(at.Header) > 0 {
		h := cfg.Header.Clone()
		if h == nil {
			h = make(http.Header, len(at.Header))
		}
		for k, v := range at.Header {
			h[http.CanonicalHeaderKey(k)] = v
		}
		cfg.Header = h
	}
	defer func() {
		if err == nil && e.Validate != nil {
			if verr := e.Validate(cfg); verr != nil {
				err = &ConfigError{Provider: e.Name, Err: verr}
			}
		}
	}()
	if e.Mock {
		url, err := s.startMock()
		if err != nil {
			return cfg, err
		}
		cfg.BaseURL, cfg.APIKey = url+e.MockPath, mockKey
		return cfg, nil
	}
	cfg.BaseURL = e.BaseURL(baseURL, s.getenv)
	if cfg.BaseURL == "" {
		return cfg, &ConfigError{Provider: e.Name, Err: fmt.Errorf("%s is not set: pass --base-url with the %s endpoint", e.BaseURLEnv, e.Name)}
	}
	if cfg.APIVersion == "" && e.APIVersionEnv != "" {
		cfg.APIVersion = strings.TrimSpace(s.getenv(e.APIVersionEnv))
	}
	if s.noAuth {
		return cfg, nil
	}
	cfg.APIKey = e.Key(s.getenv)
	if cfg.APIKey == "" && (e.KeyOptional == nil || !e.KeyOptional(cfg.BaseURL)) {
		return cfg, &MissingKeyError{Provider: e.Name, Vars: e.KeyEnv}
	}
	return cfg, nil
}

// startMock serves the built-in mock on a loopback port with generous
// limits, once per Set, and returns its root URL.
func (s *Set) startMock() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mock == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		s.mock = &http.Server{Handler: mock.New(mock.Config{}), ReadHeaderTimeout: 10 * time.Second}
		s.mockURL = "http://" + ln.Addr().String()
		go s.mock.Serve(ln)
	}
	return s.mockURL, nil
}

// Close stops the in-process mock, if one was started.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mock == nil {
		return nil
	}
	return s.mock.Close()
}
