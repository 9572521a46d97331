package cmd

import (
	"bufio"
	"bytes"
	"errors"
	"os"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
)

// environment builds the routes of one run from the provider registry.
type environment struct {
	io  *IO
	o   *BatchOptions
	set *registry.Set
	// primary is the registry entry of the primary route.
	primary registry.Entry
}

func newEnvironment(io *IO, o *BatchOptions) *environment {
	return &environment{io: io, o: o, set: registry.NewSet(io.Getenv, providers.Config{
		Stream:           o.Stream,
		HTTPClient:       providers.NewHTTPClient(o.Concurrency),
		FirstByteTimeout: o.FirstByte,
		IdleTimeout:      o.Idle,
		MaxResponseBytes: o.MaxResponseBytes,
	})}
}

func (e *environment) close() { e.set.Close() }

// route builds the provider named name ("" = infer) for model.
func (e *environment) route(name, model string, primary bool) (runner.Route, error) {
	entry, err := registry.Resolve(name, e.inputShape(), e.io.Getenv)
	if err != nil {
		return runner.Route{}, &usageError{err}
	}
	base := ""
	if primary {
		base = e.o.BaseURL
	}
	p, err := e.set.Provider(entry, base)
	var mk *registry.MissingKeyError
	if errors.As(err, &mk) {
		return runner.Route{}, &usageError{err}
	} else if err != nil {
		return runner.Route{}, err
	}
	rt := runner.Route{Provider: p, Admission: entry.Admission, Pool: e.o.Pool}
	if primary {
		e.primary = entry
	} else {
		rt.Model = model
		rt.Pool = ""
	}
	return rt, nil
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
