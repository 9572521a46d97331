package registry

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestTableIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range table {
		if seen[e.Name] {
			t.Errorf("%s: listed twice", e.Name)
		}
		seen[e.Name] = true
		if e.New == nil || e.Format == 0 {
			t.Errorf("%s: no constructor or format", e.Name)
		}
		if !e.Mock && (len(e.KeyEnv) == 0 || (e.DefaultBaseURL == "" && e.BaseURLEnv == "")) {
			t.Errorf("%s: no key variable or endpoint", e.Name)
		}
	}
	if want := []string{"openai", "anthropic", "azure", "gemini", "groq", "mock", "mock-openai", "mock-anthropic", "mock-azure", "mock-gemini"}; !slices.Equal(Names(), want) {
		t.Errorf("Names() = %v, want %v", Names(), want)
	}
	if _, err := Lookup("gemini-ultra"); err == nil || !strings.Contains(err.Error(), "openai, anthropic, azure, gemini, groq, mock") {
		t.Errorf("Lookup of an unknown name: %v", err)
	}
}

func TestResolveAndInfer(t *testing.T) {
	tests := map[string]struct {
		name  string
		shape providers.Format
		env   func(string) string
		want  string
	}{
		"named":                                   {"anthropic", providers.FormatOpenAI, env(), "anthropic"},
		"mock follows an Anthropic input":         {"mock", providers.FormatAnthropic, env(), "mock-anthropic"},
		"mock follows an OpenAI input":            {"mock", providers.FormatOpenAI, env(), "mock-openai"},
		"Anthropic lines go to Anthropic":         {"", providers.FormatAnthropic, env("OPENAI_API_KEY", "k"), "anthropic"},
		"neutral lines: OpenAI when its key set":  {"", providers.FormatOpenAI, env("OPENAI_API_KEY", "k", "ANTHROPIC_API_KEY", "k"), "openai"},
		"neutral lines: the provider with a key":  {"", providers.FormatOpenAI, env("ANTHROPIC_API_KEY", "k"), "anthropic"},
		"neutral lines: Azure's key":              {"", providers.FormatOpenAI, env("AZURE_OPENAI_API_KEY", "k"), "azure"},
		"neutral lines, no key: OpenAI (and ask)": {"", providers.FormatOpenAI, env(), "openai"},
		"mock follows a Gemini input":             {"mock", providers.FormatGemini, env(), "mock-gemini"},
		"Gemini lines go to Gemini":               {"", providers.FormatGemini, env("OPENAI_API_KEY", "k"), "gemini"},
		"neutral lines: Gemini's key":             {"", providers.FormatOpenAI, env("GEMINI_API_KEY", "k"), "gemini"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			e, err := Resolve(tt.name, tt.shape, tt.env)
			if err != nil || e.Name != tt.want {
				t.Fatalf("Resolve(%q) = %s, %v; want %s", tt.name, e.Name, err, tt.want)
			}
		})
	}
}

func TestKeyAndBaseURL(t *testing.T) {
	e, _ := Lookup("openai")
	getenv := env("OPENAI_API_KEY", " sk-1 ", "OPENAI_BASE_URL", "http://proxy:8000/v1/")
	if k := e.Key(getenv); k != "sk-1" {
		t.Errorf("Key = %q", k)
	}
	for flag, want := range map[string]string{"": "http://proxy:8000/v1", "http://flag/v1/": "http://flag/v1"} {
		if got := e.BaseURL(flag, getenv); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", flag, got, want)
		}
	}
	if got := e.BaseURL("", env()); got != "https://api.openai.com/v1" {
		t.Errorf("default BaseURL = %q", got)
	}
}

func TestSetBuildsClients(t *testing.T) {
	s := NewSet(env("ANTHROPIC_API_KEY", "sk-ant"), providers.Config{Stream: true})
	defer s.Close()

	oa, _ := Lookup("openai")
	_, err := s.Provider(oa, "")
	var mk *MissingKeyError
	if !errors.As(err, &mk) || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set") {
		t.Fatalf("no key: %v", err)
	}
	local := oa
	local.KeyOptional = func(base string) bool { return strings.HasPrefix(base, "http://127.0.0.1") }
	if p, err := s.Provider(local, "http://127.0.0.1:8000/v1"); err != nil || p.BaseURL() != "http://127.0.0.1:8000/v1" {
		t.Fatalf("keyless local server: %v", err)
	}

	an, _ := Lookup("anthropic")
	p, err := s.Provider(an, "")
	if err != nil || p.Name() != "anthropic" || p.BaseURL() != "https://api.anthropic.com" {
		t.Fatalf("anthropic: %v", err)
	}
	bc, err := s.Batch(an, p.BaseURL())
	if err != nil || bc.Name() != "anthropic" || bc.BaseURL() != p.BaseURL() {
		t.Fatalf("anthropic batch: %v", err)
	}

	m1, _ := Resolve("mock", providers.FormatOpenAI, env())
	m2, _ := Resolve("mock", providers.FormatAnthropic, env())
	p1, err1 := s.Provider(m1, "http://ignored")
	p2, err2 := s.Provider(m2, "")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !strings.HasPrefix(p1.BaseURL(), "http://127.0.0.1:") || p1.BaseURL() != p2.BaseURL()+"/v1" {
		t.Errorf("one in-process mock for both: %s, %s", p1.BaseURL(), p2.BaseURL())
	}
}

func TestAdmissionRules(t *testing.T) {
	u := providers.Usage{InputTokens: 1000, CacheReadTokens: 800, CacheWriteTokens: 100, OutputTokens: 5}
	for name, want := range map[string]struct {
		out     providers.OutputRule
		charged int64
	}{
		"openai":         {providers.ReserveCap, 1000},
		"mock-openai":    {providers.ReserveCap, 1000},
		"anthropic":      {providers.ReserveExpected, 200}, // cache reads are not counted against ITPM
		"mock-anthropic": {providers.ReserveExpected, 200},
		"azure":          {providers.ReserveCap, 1000}, // prompt + max_tokens at admission, as Microsoft documents
		"mock-azure":     {providers.ReserveCap, 1000},
		"gemini":         {providers.ReserveExpected, 1000},
		"mock-gemini":    {providers.ReserveExpected, 1000},
	} {
		e, _ := Lookup(name)
		if strings.Contains(name, "azure") != (e.Admission.Charge == providers.ChargeCap) {
			t.Errorf("%s: documented charge %v; Azure's alone is prompt + max_tokens", name, e.Admission.Charge)
		}
		if e.Admission.Output != want.out || e.Admission.InputCharged(u) != want.charged {
			t.Errorf("%s: output rule %d, charged %d; want %d, %d", name, e.Admission.Output, e.Admission.InputCharged(u), want.out, want.charged)
		}
	}
}

// TestShapeOf: a line's format is that of the one shape whose request
// member it holds (present, whatever its value: the reader refuses a
// request that is not an object), and a run without --provider sends
// it to that format's provider.
func TestShapeOf(t *testing.T) {
	for line, want := range map[string]providers.Format{
		`{"custom_id":"a","params":{"model":"claude-x","max_tokens":5,"messages":[]}}`:                           providers.FormatAnthropic,
		`{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[]}}`: providers.FormatOpenAI,
		`{"custom_id":"c","prompt":"hi"}`:                                providers.FormatOpenAI,
		`{"key":"d","request":{"contents":[{"parts":[{"text":"hi"}]}]}}`: providers.FormatGemini,
		`{"key":"e","request":"hi","prompt":"hi"}`:                       providers.FormatGemini,
		`{"custom_id":"f","prompt":"hi","system":"s","model":"m"}`:       providers.FormatOpenAI,
	} {
		got, err := ShapeOf([]byte(line))
		if got != want || err != nil {
			t.Errorf("ShapeOf(%s) = %v, %v; want %v", line, got, err, want)
		}
		if e := Infer(got, env()); want != providers.FormatOpenAI && e.Format != want {
			t.Errorf("%s: inferred %s, of format %v", line, e.Name, e.Format)
		}
	}
}

// TestLineInTwoShapesIsNone: a line holding the request members of two
// shapes is in neither, whichever two and in whichever order, for
// ShapeIn and ShapeOf alike; the error names both members.
func TestLineInTwoShapesIsNone(t *testing.T) {
	shapes := Lines()
	for i := range shapes {
		var one Held
		one[i] = true
		if got, err := ShapeIn(one); got != i || err != nil {
			t.Errorf("ShapeIn(only %s) = %d, %v; want %d", shapes[i].Key, got, err, i)
		}
		for j := range shapes {
			if j == i {
				continue
			}
			two := one
			two[j] = true
			got, err := ShapeIn(two)
			if err == nil || got != -1 || !strings.Contains(err.Error(), shapes[i].Key) || !strings.Contains(err.Error(), shapes[j].Key) {
				t.Errorf("ShapeIn(%s and %s) = %d, %v; want an error naming both", shapes[i].Key, shapes[j].Key, got, err)
			}
			line := `{"` + shapes[j].Key + `":{},"` + shapes[i].Key + `":{}}`
			if _, err := ShapeOf([]byte(line)); err == nil || !strings.Contains(err.Error(), "both") {
				t.Errorf("ShapeOf(%s) = %v; want an error", line, err)
			}
		}
	}
	if got, err := ShapeIn(Held{}); got != -1 || err != nil {
		t.Errorf("ShapeIn(none) = %d, %v; want -1", got, err)
	}
}

// TestAzureConfig: Azure's endpoint and api-version come from the
// environment (the SDKs' variables) or the flags; a deployment URL without
// a version, or no endpoint at all, is a configuration error before
// anything is sent; the deployment a URL names is its model.
func TestAzureConfig(t *testing.T) {
	az, _ := Lookup("azure")
	getenv := env("AZURE_OPENAI_API_KEY", "az-key", "AZURE_OPENAI_ENDPOINT", "https://x.openai.azure.com", "OPENAI_API_VERSION", "2024-10-21")
	s := NewSet(getenv, providers.Config{})
	p, err := s.Provider(az, "")
	if err != nil || p.Name() != "azure" || p.BaseURL() != "https://x.openai.azure.com/openai?api-version=2024-10-21" {
		t.Fatalf("from the environment: %v %v", p, err)
	}
	p, err = s.Provider(az, "https://y.openai.azure.com/openai/deployments/dep1")
	if err != nil || p.BaseURL() != "https://y.openai.azure.com/openai/deployments/dep1?api-version=2024-10-21" || az.Model(p.BaseURL()) != "dep1" {
		t.Fatalf("a deployment URL: %v %v", p, err)
	}
	flag := NewSet(getenv, providers.Config{APIVersion: "2025-04-01-preview"})
	if p, err = flag.Provider(az, ""); err != nil || !strings.HasSuffix(p.BaseURL(), "api-version=2025-04-01-preview") {
		t.Fatalf("--api-version beats OPENAI_API_VERSION: %v %v", p, err)
	}
	bc, err := s.Batch(az, "")
	if err != nil || bc.Name() != "azure" || bc.BaseURL() != "https://x.openai.azure.com/openai?api-version=2024-10-21" {
		t.Fatalf("batch client: %v", err)
	}

	var ce *ConfigError
	noVersion := NewSet(env("AZURE_OPENAI_API_KEY", "k"), providers.Config{})
	if _, err := noVersion.Provider(az, "https://x.openai.azure.com/openai/deployments/dep1"); !errors.As(err, &ce) || !strings.Contains(err.Error(), "OPENAI_API_VERSION") {
		t.Errorf("deployment URL without a version: %v", err)
	}
	if _, err := noVersion.Provider(az, ""); !errors.As(err, &ce) || !strings.Contains(err.Error(), "AZURE_OPENAI_ENDPOINT is not set") {
		t.Errorf("no endpoint: %v", err)
	}
	if p, err := noVersion.Provider(az, "https://x.openai.azure.com"); err != nil || p.BaseURL() != "https://x.openai.azure.com/openai/v1" {
		t.Errorf("a bare endpoint without a version is the v1 API: %v %v", p, err)
	}
	var mk *MissingKeyError
	if _, err := NewSet(env(), providers.Config{}).Provider(az, "https://x.openai.azure.com"); !errors.As(err, &mk) || !strings.Contains(err.Error(), "AZURE_OPENAI_API_KEY") {
		t.Errorf("no key: %v", err)
	}
}

// TestLocalServersAndNoAuth: a loopback or private base URL needs no key;
// a public one does; --no-auth sends none even when one is set.
func TestLocalServersAndNoAuth(t *testing.T) {
	oa, _ := Lookup("openai")
	an, _ := Lookup("anthropic")
	s := NewSet(env(), providers.Config{})
	for _, base := range []string{"http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://192.168.1.9:8080/v1"} {
		if _, err := s.Provider(oa, base); err != nil {
			t.Errorf("%s: %v", base, err)
		}
		if _, err := s.Provider(an, base); err != nil {
			t.Errorf("anthropic %s: %v", base, err)
		}
	}
	var mk *MissingKeyError
	if _, err := s.Provider(oa, "https://gateway.example.com/v1"); !errors.As(err, &mk) || !strings.Contains(err.Error(), "--no-auth") {
		t.Errorf("a public URL without a key: %v", err)
	}

	var gotAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer srv.Close()
	keyed := NewSet(env("OPENAI_API_KEY", "sk-real"), providers.Config{})
	noAuth := NewSet(env("OPENAI_API_KEY", "sk-real"), providers.Config{})
	noAuth.SendNoKey()
	for _, set := range []*Set{keyed, noAuth} {
		p, err := set.Provider(oa, srv.URL+"/v1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(t.Context(), &providers.Request{Body: []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(gotAuth, []string{"Bearer sk-real", ""}) {
		t.Errorf("Authorization sent: %q, want the key, then none", gotAuth)
	}
	if _, err := noAuth.Provider(oa, "https://gateway.example.com/v1"); err != nil {
		t.Errorf("--no-auth needs no key anywhere: %v", err)
	}
}

// TestGeminiEntry: Google's SDKs' key and endpoint variables (the key in
// GOOGLE_API_KEY wins; a bare host gets the API version), and the prompt
// the budget counts is the contents' text.
func TestGeminiEntry(t *testing.T) {
	e, _ := Lookup("gemini")
	if k := e.Key(env("GEMINI_API_KEY", "g", "GOOGLE_API_KEY", "o")); k != "o" {
		t.Errorf("both set: key %q, want GOOGLE_API_KEY's", k)
	}
	if k := e.Key(env("GEMINI_API_KEY", "g")); k != "g" {
		t.Errorf("GEMINI_API_KEY: key %q", k)
	}
	s := NewSet(env("GEMINI_API_KEY", "g", "GOOGLE_GEMINI_BASE_URL", "http://proxy:8080/"), providers.Config{})
	defer s.Close()
	p, err := s.Provider(e, "")
	if err != nil || p.Format() != providers.FormatGemini || p.BaseURL() != "http://proxy:8080" {
		t.Fatalf("%v %v", p, err)
	}
	req := &providers.Request{Body: []byte(`{"systemInstruction":{"parts":[{"text":"Be terse."}]},"contents":[{"role":"user","parts":[{"text":"Hi"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}]},{"role":"model","parts":[{"text":"Yo"}]}]}`)}
	if got := string(e.Admission.PromptText(req)); got != "Be terse.\nHi\nYo\n" {
		t.Errorf("prompt text %q", got)
	}
}

// TestDayRules: Gemini's days end at Pacific midnight; Groq's requests
// headers count per day, and reach the client's rate-limit reading.
func TestDayRules(t *testing.T) {
	g, _ := Lookup("gemini")
	if z := g.Admission.DayZone; z == nil || z().String() != "America/Los_Angeles" {
		t.Errorf("gemini day zone %v", z != nil)
	}
	var seen providers.RateLimits
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ratelimit-limit-requests", "14400")
		w.Header().Set("x-ratelimit-remaining-requests", "14399")
		w.Header().Set("x-ratelimit-reset-requests", "6s")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer srv.Close()
	for _, name := range []string{"groq", "openai"} {
		e, _ := Lookup(name)
		p, err := NewSet(env("GROQ_API_KEY", "gk", "OPENAI_API_KEY", "ok"), providers.Config{}).Provider(e, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Send(t.Context(), &providers.Request{Body: []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)})
		if err != nil {
			t.Fatal(err)
		}
		seen = resp.Limits
		if perDay := name == "groq"; seen.DayRequests.Known() != perDay || seen.Requests.Known() == perDay || p.Name() != name {
			t.Errorf("%s (%s): %+v", name, p.Name(), seen)
		}
	}
}

// TestUnknownProviderSuggests: a slip or a product name gets the
// provider meant.
func TestUnknownProviderSuggests(t *testing.T) {
	for name, want := range map[string]string{"opneai": "did you mean openai?", "claude": "did you mean anthropic?", "gemnii": "did you mean gemini?", "google": "did you mean gemini?"} {
		_, err := Lookup(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	if _, err := Lookup("zzzzzzzzzz"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("nothing close, yet: %v", err)
	}
}
