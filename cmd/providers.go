package cmd

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/anthropic"
	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/providers/openai"
	"github.com/llmrun/llmrun/runner"
)

// Default API roots, used when neither --base-url nor the environment names one.
const (
	defaultOpenAIBase    = "https://api.openai.com/v1"
	defaultAnthropicBase = "https://api.anthropic.com"
)

// environment builds providers for one run: one shared HTTP client, and at
// most one in-process mock server.
type environment struct {
	io     *IO
	o      *BatchOptions
	client *http.Client
	mock   *http.Server
	mockLn net.Listener
}

func newEnvironment(io *IO, o *BatchOptions) *environment {
	return &environment{io: io, o: o, client: providers.NewHTTPClient(o.Concurrency)}
}

func (e *environment) close() {
	if e.mock != nil {
		e.mock.Close()
	}
}

// route builds the provider named name ("" = infer) for model.
func (e *environment) route(name, model string, primary bool) (runner.Route, error) {
	if name == "" {
		name = e.inferProvider()
	}
	cfg := providers.Config{
		Stream:           e.o.Stream,
		HTTPClient:       e.client,
		FirstByteTimeout: e.o.FirstByte,
		IdleTimeout:      e.o.Idle,
	}
	base := ""
	if primary {
		base = e.o.BaseURL
	}
	var p providers.Provider
	switch name {
	case "openai":
		cfg.APIKey = e.io.Getenv("OPENAI_API_KEY")
		if cfg.APIKey == "" {
			return runner.Route{}, usagef("OPENAI_API_KEY is not set (try --provider mock for a dry run against the built-in mock)")
		}
		cfg.BaseURL = firstNonEmpty(base, e.io.Getenv("OPENAI_BASE_URL"), defaultOpenAIBase)
		p = openai.New(cfg)
	case "anthropic":
		cfg.APIKey = e.io.Getenv("ANTHROPIC_API_KEY")
		if cfg.APIKey == "" {
			return runner.Route{}, usagef("ANTHROPIC_API_KEY is not set (try --provider mock for a dry run against the built-in mock)")
		}
		cfg.BaseURL = firstNonEmpty(base, e.io.Getenv("ANTHROPIC_BASE_URL"), defaultAnthropicBase)
		p = anthropic.New(cfg)
	case "mock", "mock-anthropic", "mock-openai":
		url, err := e.startMock()
		if err != nil {
			return runner.Route{}, err
		}
		cfg.APIKey = "mock-key"
		if name == "mock-anthropic" || (name == "mock" && e.inputShape() == providers.FormatAnthropic) {
			cfg.BaseURL = url
			p = anthropic.New(cfg)
		} else {
			cfg.BaseURL = url + "/v1"
			p = openai.New(cfg)
		}
	default:
		return runner.Route{}, usagef("unknown provider %q (want openai, anthropic or mock)", name)
	}
	rt := runner.Route{Provider: p, Pool: e.o.Pool}
	if !primary {
		rt.Model = model
		rt.Pool = ""
	}
	return rt, nil
}

// inferProvider picks a provider from the input's first line, then from
// which API key is set.
func (e *environment) inferProvider() string {
	if e.inputShape() == providers.FormatAnthropic {
		return "anthropic"
	}
	if e.io.Getenv("OPENAI_API_KEY") == "" && e.io.Getenv("ANTHROPIC_API_KEY") != "" {
		return "anthropic"
	}
	return "openai"
}

// inputShape reports the wire format of the input's first request line:
// Anthropic for {"params":...}, OpenAI otherwise.
func (e *environment) inputShape() providers.Format {
	f, err := os.Open(e.o.Input)
	if err != nil {
		return providers.FormatOpenAI
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if gjson.GetBytes(line, "params").Exists() {
			return providers.FormatAnthropic
		}
		return providers.FormatOpenAI
	}
	return providers.FormatOpenAI
}

// startMock serves the built-in mock on a loopback port with generous
// limits, once per run.
func (e *environment) startMock() (string, error) {
	if e.mock == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		e.mockLn = ln
		e.mock = &http.Server{Handler: mock.New(mock.Config{}), ReadHeaderTimeout: 10 * time.Second}
		go e.mock.Serve(ln)
	}
	return "http://" + e.mockLn.Addr().String(), nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s = strings.TrimSpace(s); s != "" {
			return strings.TrimRight(s, "/")
		}
	}
	return ""
}
