// Package modelrules knows what each model family's API accepts in a
// request body beyond its wire format: which field caps the output
// (OpenAI's reasoning models refuse max_tokens), which sampling
// parameters are fixed at their defaults or exclusive of each other, what
// JSON mode needs, and which provider serves the family at all. The rules
// are data (rules.json, embedded), kept beside the prices and refreshed
// the same way: LiteLLM's model list, which pricing/gen reads, names each
// provider's models and marks the reasoning ones (supports_reasoning); the
// package's tests check every model of pricing/snapshot.json against the
// families.
//
// Apply rewrites what is equivalent (max_tokens to max_completion_tokens)
// and refuses what is not with an error that says the rule and the fix, so a body a family
// is known to reject is never sent. Model names of no family (a vLLM or
// Ollama model) pass untouched.
//
// The package imports nothing of llmrun's, so the parser, the translation
// and the mock server can all read the same rules.
package modelrules

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"sync"
	"sync/atomic"
)

//go:embed rules.json
var rulesJSON []byte

// Provider names a family's provider, as the wire formats are named:
// "openai", "anthropic", "gemini".
type Provider = string

// Family is one model family's rules.
type Family struct {
	Name     string   `json:"name"`
	Provider Provider `json:"provider"`
	// Match is a regular expression on the model name.
	Match string `json:"match"`
	// TokenField is the output cap field the family takes in Chat
	// Completions ("max_completion_tokens": max_tokens is refused); ""
	// takes either.
	TokenField string `json:"token_field"`
	// Fixed are parameters the family takes only at this value (their
	// default), unless FixedUnless holds.
	Fixed       map[string]json.RawMessage `json:"fixed"`
	FixedUnless *Condition                 `json:"fixed_unless"`
	// Exclusive are groups of parameters of which at most one may be set.
	Exclusive [][]string `json:"exclusive"`
	// Max bounds numeric parameters.
	Max map[string]float64 `json:"max"`
	// JSONNeedsWord says JSON mode (response_format json_object) needs
	// the word "json" in the messages.
	JSONNeedsWord bool `json:"json_needs_word"`
	// Source says where the rule comes from.
	Source string `json:"source"`

	// re is Match compiled on first use: a run's models usually match one
	// of the first families, and start-up compiled all of them.
	re func() *regexp.Regexp
}

// Condition is a field of the body holding a value.
type Condition struct {
	Field string          `json:"field"`
	Value json.RawMessage `json:"value"`
}

// Rules are the families, first match wins. A Rules is safe for
// concurrent use.
type Rules struct {
	families []*Family
	// cache maps model names to their family (nil: none), read without a
	// lock by every parsing goroutine; bounded, as model names come from
	// the input.
	cache  sync.Map // string → *Family
	cached atomic.Int64
}

// maxCached bounds the model names Rules remembers.
const maxCached = 4096

// Default returns the embedded rules, read once per process: each route
// of a run asks for them.
func Default() *Rules { return defaultRules() }

var defaultRules = sync.OnceValue(func() *Rules {
	r, err := Parse(rulesJSON)
	if err != nil {
		panic("modelrules: embedded rules.json: " + err.Error())
	}
	return r
})

// Parse reads rules in rules.json's shape.
func Parse(data []byte) (*Rules, error) {
	var file struct {
		Families []*Family `json:"families"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&file); err != nil {
		return nil, err
	}
	for _, f := range file.Families {
		if _, err := syntax.Parse(f.Match, syntax.Perl); err != nil {
			return nil, fmt.Errorf("family %s: %v", f.Name, err)
		}
		switch f.Provider {
		case "openai", "anthropic", "gemini":
		default:
			return nil, fmt.Errorf("family %s: unknown provider %q", f.Name, f.Provider)
		}
		f.re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(f.Match) })
	}
	return &Rules{families: file.Families}, nil
}

// Family returns the family of model, or nil when none claims it.
func (r *Rules) Family(model string) *Family {
	if r == nil || model == "" {
		return nil
	}
	if f, ok := r.cache.Load(model); ok {
		return f.(*Family)
	}
	var f *Family
	for _, fam := range r.families {
		if fam.re().MatchString(model) {
			f = fam
			break
		}
	}
	if r.cached.Add(1) <= maxCached {
		r.cache.Store(model, f)
	}
	return f
}

// ProviderName is how messages name a provider.
func ProviderName(p Provider) string {
	switch p {
	case "openai":
		return "an OpenAI"
	case "anthropic":
		return "an Anthropic"
	case "gemini":
		return "a Gemini"
	}
	return "a " + p
}

// fixedParams lists f's fixed parameters in a stable order.
func (f *Family) fixedParams() []string {
	names := make([]string, 0, len(f.Fixed))
	for k := range f.Fixed {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
