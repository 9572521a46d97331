package estimate

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestRawInputTokens(t *testing.T) {
	e := NewEstimator()
	tests := map[string]struct {
		model string
		text  string
		want  int64
	}{
		"o200k gpt-4o":            {"gpt-4o-mini", "hello world", 2},
		"o200k o-series":          {"o3-mini", "hello world", 2},
		"o200k gpt-5 with prefix": {"openai/gpt-5", "hello world", 2},
		"cl100k gpt-4":            {"gpt-4-turbo", "hello world", 2},
		"cl100k gpt-3.5":          {"gpt-3.5-turbo", "hello world", 2},
		// The encodings split this differently (counts from the tokenizer's own test vectors).
		"o200k differs":                    {"gpt-4o", "supercalifragilistic", 6},
		"cl100k differs":                   {"gpt-4", "supercalifragilistic", 7},
		"claude is char-based, rounded up": {"claude-sonnet-4-5", "hello world", 3},
		"empty":                            {"claude-haiku-4-5", "", 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := e.RawInputTokens(tt.model, []byte(tt.text)); got != tt.want {
				t.Fatalf("RawInputTokens(%q, %q) = %d, want %d", tt.model, tt.text, got, tt.want)
			}
		})
	}
}

func TestRawInputTokensExtrapolatesLongText(t *testing.T) {
	e := NewEstimator()
	long := bytes.Repeat([]byte("We know what we are, but know not what we may be. "), 4*exactTokenizeBytes/51)
	got := e.RawInputTokens("gpt-4o", long)
	n, err := e.o200k.get().Count(string(long))
	if err != nil {
		t.Fatal(err)
	}
	want := int64(n)
	if d := math.Abs(float64(got-want)) / float64(want); d > 0.01 {
		t.Fatalf("long text estimate %d, want within 1%% of %d", got, want)
	}
}

func TestEncodingFor(t *testing.T) {
	e := NewEstimator()
	for model, want := range map[string]*lazyCodec{
		"gpt-4o": &e.o200k, "chatgpt-4o-latest": &e.o200k, "gpt-4.1-nano": &e.o200k, "o1": &e.o200k,
		"o4-mini": &e.o200k, "GPT-5": &e.o200k, "gpt-6-preview": &e.o200k, "ft:gpt-4o-mini:org::id": &e.o200k,
		"gpt-4": &e.cl100k, "gpt-4-0613": &e.cl100k, "gpt-35-turbo": &e.cl100k, "text-embedding-3-small": &e.cl100k,
		"claude-opus-4-1": nil, "gemini-2.5-pro": nil, "llama-3.1-70b": nil, "mock": nil, "omni": nil,
	} {
		if got := e.encodingFor(model); got != want {
			t.Errorf("encodingFor(%q) wrong", model)
		}
	}
}

func TestCalibrationConverges(t *testing.T) {
	e := NewEstimator()
	text := bytes.Repeat([]byte("abcd"), 100) // 100 char-based tokens
	if got := e.InputTokens("k", "claude-sonnet-4-5", text); got != 100 {
		t.Fatalf("uncalibrated estimate %d, want 100", got)
	}
	// The provider really counts 1.3× what we estimate. The first report
	// is taken whole; later ones (here a burst of responses to requests
	// all estimated before any calibration) must not overshoot.
	raw := e.RawInputTokens("claude-sonnet-4-5", text)
	for range 40 {
		e.ObserveInput("k", raw, 130)
		if got := e.InputTokens("k", "claude-sonnet-4-5", text); got != 130 {
			t.Fatalf("calibrated estimate %d, want 130 (ratio %v)", got, e.Ratio("k"))
		}
	}
	// A changed ratio is followed smoothly.
	for range 60 {
		e.ObserveInput("k", raw, 110)
	}
	if got := e.InputTokens("k", "claude-sonnet-4-5", text); got < 110 || got > 111 {
		t.Fatalf("recalibrated estimate %d, want ≈110 (ratio %v)", got, e.Ratio("k"))
	}
	// Calibration is per key.
	if got := e.InputTokens("other", "claude-sonnet-4-5", text); got != 100 {
		t.Fatalf("other key's estimate %d, want 100", got)
	}
	// One absurd report moves the ratio only a bounded step.
	before := e.Ratio("k")
	e.ObserveInput("k", 130, 1_000_000)
	if r := e.Ratio("k"); r > before*math.Pow(calibMax, calibAlpha)+1e-9 {
		t.Fatalf("ratio jumped from %v to %v", before, r)
	}
	e.ObserveInput("k", 0, 10) // ignored
	e.ObserveInput("k", 10, 0) // ignored
}

func TestExpectedOutput(t *testing.T) {
	e := NewEstimator()
	if got := e.ExpectedOutput("k", 4096); got != 4096 {
		t.Fatalf("before observations: %d, want max_tokens 4096", got)
	}
	for i := range outputMinSamples - 1 {
		e.ObserveOutput("k", int64(100+i))
	}
	if got := e.ExpectedOutput("k", 4096); got != 4096 {
		t.Fatalf("with too few observations: %d, want 4096", got)
	}
	// 100 outputs 1..100: p95 (nearest rank) is 95.
	e = NewEstimator()
	for i := range 100 {
		e.ObserveOutput("k", int64(i+1))
	}
	if got := e.ExpectedOutput("k", 4096); got != 95 {
		t.Fatalf("p95 = %d, want 95", got)
	}
	if got := e.ExpectedOutput("k", 50); got != 50 {
		t.Fatalf("never above max_tokens: got %d, want 50", got)
	}
	if got := e.ExpectedOutput("k", 0); got != 95 {
		t.Fatalf("without max_tokens: got %d, want 95", got)
	}
	// Only the last outputWindow observations count.
	for range outputWindow {
		e.ObserveOutput("k", 10)
	}
	if got := e.ExpectedOutput("k", 4096); got != 10 {
		t.Fatalf("after the window moved: %d, want 10", got)
	}
}

func TestEstimatorConcurrentUse(t *testing.T) {
	e := NewEstimator()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			key := fmt.Sprint("k", g%3)
			for i := range 200 {
				raw := e.RawInputTokens("gpt-4o", []byte("The quick brown fox jumps over the lazy dog."))
				_ = e.Calibrate(key, raw)
				e.ObserveInput(key, raw, raw+int64(i%3))
				e.ObserveOutput(key, int64(i))
				_ = e.ExpectedOutput(key, 1000)
			}
		})
	}
	wg.Wait()
}

// benchPrompt is about the size of the end-to-end prompts (~135 tokens).
var benchPrompt = []byte(`You are a careful assistant. Summarise the following customer review in one sentence, ` +
	`then classify its sentiment as positive, negative or mixed, and list at most three product features the ` +
	`customer mentions. Review: "I bought this kettle for my office. It boils quickly and the handle stays cool, ` +
	`but the lid is stiff and the cord is too short for our counter. Customer support answered within a day and ` +
	`offered a replacement lid, which I appreciated. Overall I would buy it again, with reservations."`)

func BenchmarkEstimate(b *testing.B) {
	for _, model := range []string{"gpt-4o-mini", "gpt-4", "claude-sonnet-4-5"} {
		b.Run(model, func(b *testing.B) {
			e := NewEstimator()
			e.InputTokens("k", model, benchPrompt) // load the vocabulary outside the timing
			b.SetBytes(int64(len(benchPrompt)))
			b.ReportAllocs()
			for b.Loop() {
				e.InputTokens("k", model, benchPrompt)
			}
		})
	}
}

// TestExpectedOutputMatchesSortedWindow: the p95 kept from the sorted
// window equals the p95 of the last outputWindow observations, sorted
// afresh, at every step of a seeded sequence that wraps the ring many
// times (with repeated values).
func TestExpectedOutputMatchesSortedWindow(t *testing.T) {
	e := NewEstimator()
	r := rand.New(rand.NewPCG(5, 6))
	var all []int64
	for i := range 5 * outputWindow {
		v := int64(r.IntN(300))
		if i%7 == 0 {
			v = 42
		}
		e.ObserveOutput("k", v)
		all = append(all, v)
		if len(all) < outputMinSamples {
			continue
		}
		want := p95(all[max(0, len(all)-outputWindow):])
		if got := e.ExpectedOutput("k", 0); got != want {
			t.Fatalf("after %d observations: %d, want %d", i+1, got, want)
		}
	}
}
