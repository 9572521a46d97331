// Package registry is the one table of the providers llmrun speaks: each
// entry names a provider, its wire format, where its key and endpoint come
// from, how to build its live and batch clients, and how it meters
// requests against its rate limits. Nothing else in llmrun knows provider
// names, key variables or default endpoints: adding a provider is one entry
// here plus its package.
package registry

import (
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // Gemini's day resets at Pacific midnight, wherever llmrun runs

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/anthropic"
	"github.com/llmrun/llmrun/providers/azure"
	"github.com/llmrun/llmrun/providers/gemini"
	"github.com/llmrun/llmrun/providers/openai"
)

// Entry is one provider.
type Entry struct {
	// Name is the --provider value.
	Name string
	// Format is the wire format of the request bodies it takes; input lines
	// of another format are translated.
	Format providers.Format
	// KeyEnv lists the environment variables that may hold the API key,
	// first set wins.
	KeyEnv []string
	// BaseURLEnv names the environment variable that overrides
	// DefaultBaseURL ("" for none). A provider without a default (Azure:
	// every resource has its own) needs one of them or --base-url.
	BaseURLEnv     string
	DefaultBaseURL string
	// APIVersionEnv names the environment variable holding the API version
	// when --api-version is not given ("" for a provider without one).
	APIVersionEnv string
	// Validate rejects a configuration the provider cannot work with (an
	// Azure deployment URL without an api-version) before anything is
	// sent; nil accepts any.
	Validate func(cfg providers.Config) error
	// Model returns the model every request to baseURL is sent as, when
	// the URL itself names it (an Azure deployment URL): it is the
	// budget's model key and the default model. Nil or "" for none.
	Model func(baseURL string) string
	// KeyOptional reports whether requests to baseURL may go without a key
	// (a local server: providers.LocalURL); nil means a key is always
	// needed, unless the Set sends none (--no-auth).
	KeyOptional func(baseURL string) bool
	// New builds the live (synchronous) client.
	New func(cfg providers.Config) providers.Provider
	// NewBatch builds the batch API client; nil when the provider has none.
	NewBatch func(cfg providers.Config) providers.BatchClient
	// Admission is how the provider meters requests: what one reserves
	// and what its usage settles, and when its days reset.
	Admission providers.Admission
	// Headers are the provider's rules for its rate-limit headers (Groq's
	// requests headers count per day).
	Headers providers.HeaderRules
	// Mock marks an entry served by the built-in mock, started in-process
	// on a loopback port (Set); MockPath is appended to its address.
	Mock     bool
	MockPath string
}

// Key returns the entry's API key from the environment, or "".
func (e *Entry) Key(getenv func(string) string) string {
	for _, v := range e.KeyEnv {
		if k := strings.TrimSpace(getenv(v)); k != "" {
			return k
		}
	}
	return ""
}

// BaseURL is the endpoint to use: flag if given, else the environment
// variable, else the default, without a trailing slash.
func (e *Entry) BaseURL(flag string, getenv func(string) string) string {
	env := ""
	if e.BaseURLEnv != "" {
		env = getenv(e.BaseURLEnv)
	}
	for _, s := range []string{flag, env, e.DefaultBaseURL} {
		if s = strings.TrimSpace(s); s != "" {
			return strings.TrimRight(s, "/")
		}
	}
	return ""
}

func newOpenAI(cfg providers.Config) providers.Provider         { return openai.New(cfg) }
func newOpenAIBatch(cfg providers.Config) providers.BatchClient { return openai.NewBatch(cfg) }
func newAnthropic(cfg providers.Config) providers.Provider      { return anthropic.New(cfg) }
func newAnthropicBatch(cfg providers.Config) providers.BatchClient {
	return anthropic.NewBatch(cfg)
}

// anthropicAdmission: Anthropic counts generated tokens against OTPM (so
// reserve the expected output, not max_tokens) and does not count cache
// reads against ITPM.
var anthropicAdmission = providers.Admission{Output: providers.ReserveExpected, Charged: providers.UncachedInput}

// azureAdmission: Microsoft documents that a request is charged its
// estimated prompt + max_tokens into the deployment's per-minute token
// counter at admission (wire-formats §6.3), so a request reserves its max
// tokens; the run drops to the expected output if the remaining-tokens
// headers show the deployment charges less (runner/charge.go).
var azureAdmission = providers.Admission{Output: providers.ReserveCap, Charge: providers.ChargeCap}

func newGemini(cfg providers.Config) providers.Provider         { return gemini.New(cfg) }
func newGeminiBatch(cfg providers.Config) providers.BatchClient { return gemini.NewBatch(cfg) }

// geminiAdmission: Gemini meters input tokens (its TPM) and requests, not
// max output, so a request reserves the output it is expected to produce;
// its prompt is the contents' text.
var geminiAdmission = providers.Admission{
	Text:    func(req *providers.Request) []byte { return providers.ContentsText(req.Body) },
	Output:  providers.ReserveExpected,
	DayZone: pacific,
}

// pacific is the zone of Gemini's daily reset (America/Los_Angeles; the
// binary carries the zone data, so it needs none on the machine). Loaded
// on first use: a run that does not count days does not read it.
var pacific = sync.OnceValue(func() *time.Location { return mustZone("America/Los_Angeles") })

func mustZone(name string) *time.Location {
	z, err := time.LoadLocation(name)
	if err != nil {
		panic(err) // time/tzdata is linked in: only a typo gets here
	}
	return z
}

// groq speaks OpenAI's format; its x-ratelimit-*-requests headers count
// requests per day (its tokens headers, per minute).
func newGroq(cfg providers.Config) providers.Provider {
	return openai.NewDialect(cfg, openai.Dialect{Name: "groq"})
}

func newGroqBatch(cfg providers.Config) providers.BatchClient {
	return openai.NewBatchDialect(cfg, openai.BatchDialect{Name: "groq"})
}

// table is every provider, in the order Infer tries their keys.
var table = []Entry{
	{
		Name: "openai", Format: providers.FormatOpenAI,
		KeyEnv: []string{"OPENAI_API_KEY"}, BaseURLEnv: "OPENAI_BASE_URL", DefaultBaseURL: "https://api.openai.com/v1",
		KeyOptional: providers.LocalURL, New: newOpenAI, NewBatch: newOpenAIBatch,
	},
	{
		Name: "anthropic", Format: providers.FormatAnthropic,
		KeyEnv: []string{"ANTHROPIC_API_KEY"}, BaseURLEnv: "ANTHROPIC_BASE_URL", DefaultBaseURL: "https://api.anthropic.com",
		KeyOptional: providers.LocalURL, New: newAnthropic, NewBatch: newAnthropicBatch, Admission: anthropicAdmission,
	},
	{
		Name: azure.Name, Format: providers.FormatOpenAI,
		KeyEnv: []string{"AZURE_OPENAI_API_KEY"}, BaseURLEnv: "AZURE_OPENAI_ENDPOINT", APIVersionEnv: "OPENAI_API_VERSION",
		New: azure.New, NewBatch: azure.NewBatch, Admission: azureAdmission, Validate: azure.Check, Model: azure.Deployment,
	},
	{
		// GOOGLE_API_KEY wins when both are set, as in Google's SDKs.
		Name: gemini.Name, Format: providers.FormatGemini,
		KeyEnv: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}, BaseURLEnv: "GOOGLE_GEMINI_BASE_URL", DefaultBaseURL: gemini.DefaultBaseURL,
		KeyOptional: providers.LocalURL, New: newGemini, NewBatch: newGeminiBatch, Admission: geminiAdmission,
	},
	{
		Name: "groq", Format: providers.FormatOpenAI,
		KeyEnv: []string{"GROQ_API_KEY"}, BaseURLEnv: "GROQ_BASE_URL", DefaultBaseURL: "https://api.groq.com/openai/v1",
		New: newGroq, NewBatch: newGroqBatch, Headers: providers.HeaderRules{RequestsPerDay: true},
	},
	{
		Name: "mock-openai", Format: providers.FormatOpenAI, Mock: true, MockPath: "/v1",
		New: newOpenAI, NewBatch: newOpenAIBatch,
	},
	{
		Name: "mock-anthropic", Format: providers.FormatAnthropic, Mock: true,
		New: newAnthropic, NewBatch: newAnthropicBatch, Admission: anthropicAdmission,
	},
	{
		// The mock's Azure dialect: the v1 API, or deployment URLs with
		// --api-version.
		Name: "mock-azure", Format: providers.FormatOpenAI, Mock: true, MockPath: "/openai",
		New: azure.New, NewBatch: azure.NewBatch, Admission: azureAdmission, Validate: azure.Check, Model: azure.Deployment,
	},
	{
		Name: "mock-gemini", Format: providers.FormatGemini, Mock: true, MockPath: "/v1beta",
		New: newGemini, NewBatch: newGeminiBatch, Admission: geminiAdmission,
	},
}

// mockAlias is the --provider value that picks the mock entry speaking
// the input's format.
const mockAlias = "mock"

// Names lists the --provider values, for help and error messages.
func Names() []string {
	names := []string{}
	for _, e := range table {
		if !e.Mock {
			names = append(names, e.Name)
		}
	}
	names = append(names, mockAlias)
	for _, e := range table {
		if e.Mock {
			names = append(names, e.Name)
		}
	}
	return names
}

// Lookup returns the entry called name.
func Lookup(name string) (Entry, error) {
	for _, e := range table {
		if e.Name == name {
			return e, nil
		}
	}
	if near := suggest(name); near != "" {
		return Entry{}, fmt.Errorf("unknown provider %q (did you mean %s? want one of %s)", name, near, strings.Join(Names(), ", "))
	}
	return Entry{}, fmt.Errorf("unknown provider %q (want %s)", name, strings.Join(Names(), ", "))
}

// Resolve returns the entry for a --provider value: name itself; "mock",
// the mock speaking the input's format; "", the one Infer picks.
func Resolve(name string, shape providers.Format, getenv func(string) string) (Entry, error) {
	switch name {
	case "":
		return Infer(shape, getenv), nil
	case mockAlias:
		for _, e := range table {
			if e.Mock && e.Format == shape {
				return e, nil
			}
		}
		return Lookup("mock-openai")
	}
	return Lookup(name)
}

// lineShapes are the input-line shapes the wire formats claim. A line
// holding one's request member (its Key) is in that shape and its format;
// a line holding none is a simple line, which every provider takes; a line
// holding two is in none (ShapeIn). This list is the one rule: the reader
// parses a line by it, and ShapeOf, which picks the provider of a run
// without --provider, reads the first line by it. A new format with its
// own batch file adds its package's Line.
var lineShapes = [...]providers.LineShape{openai.Line, anthropic.Line, gemini.Line}

// LineShapes is the list Lines returns: an array, so reading it for every
// input line allocates nothing.
type LineShapes = [len(lineShapes)]providers.LineShape

// Held says which of Lines' shapes' request members a line holds, in the
// same order.
type Held = [len(lineShapes)]bool

// Lines is the input-line shapes the formats claim (see providers.LineShape
// and ShapeIn).
func Lines() LineShapes { return lineShapes }

// ShapeIn is the index in Lines of the shape of a line holding the request
// members held says, or -1 for a line holding none. A line holding two is
// an error: no format's batch line has both (OpenAI's is {custom_id,
// method, url, body}, Anthropic's {custom_id, params}, Gemini's {key,
// request}), and taking either would send one request the user wrote and
// silently drop the other, or send it to the provider the other names.
func ShapeIn(held Held) (int, error) {
	at := -1
	for i, h := range held {
		if !h {
			continue
		}
		if at >= 0 {
			a, b := lineShapes[at], lineShapes[i]
			return -1, fmt.Errorf("line holds both %s (%s's batch shape) and %s (%s's): a line is one request in one shape; keep the one meant", a.Key, a.Format, b.Key, b.Format)
		}
		at = i
	}
	return at, nil
}

// ShapeOf is the wire format of an input line, by ShapeIn: that of the
// shape it is in, else OpenAI's, which every provider takes (simple
// lines); an error for a line in two shapes.
func ShapeOf(line []byte) (providers.Format, error) {
	var held Held
	for i, sh := range lineShapes {
		held[i] = providers.Present(gjson.GetBytes(line, sh.Key))
	}
	i, err := ShapeIn(held)
	if i < 0 {
		return providers.FormatOpenAI, err
	}
	return lineShapes[i].Format, nil
}

// Infer picks the provider for input lines of the given shape: lines in
// a provider's own batch shape (Anthropic's {"params": …}) go to that
// provider; OpenAI-shaped and simple lines, which every provider takes,
// go to the first provider whose key is set (OpenAI when none is).
func Infer(shape providers.Format, getenv func(string) string) Entry {
	if shape != providers.FormatOpenAI {
		for _, e := range table {
			if !e.Mock && e.Format == shape {
				return e
			}
		}
	}
	for _, e := range table {
		if !e.Mock && e.Key(getenv) != "" {
			return e
		}
	}
	return table[0]
}
