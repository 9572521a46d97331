package providers

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/sjson"
)

// buildBySJSON is Prompt.Build as it was before the append-based builder:
// the reference its bytes must equal (fingerprints of answered requests
// hash them).
func buildBySJSON(p Prompt, f Format) ([]byte, error) {
	body := []byte(`{}`)
	var err error
	set := func(path string, v any) {
		if err == nil {
			body, err = sjson.SetBytes(body, path, v)
		}
	}
	set("model", p.Model)
	switch f {
	case FormatGemini:
		if p.System != "" {
			set("systemInstruction.parts.0.text", p.System)
		}
		set("contents.0", map[string]any{"role": "user", "parts": []map[string]string{{"text": p.Prompt}}})
		if p.MaxTokens > 0 {
			set("generationConfig.maxOutputTokens", p.MaxTokens)
		}
	case FormatAnthropic:
		set("max_tokens", p.MaxTokens)
		if p.System != "" {
			set("system", p.System)
		}
		set("messages.0", map[string]string{"role": "user", "content": p.Prompt})
	default:
		i := 0
		if p.System != "" {
			set("messages.0", map[string]string{"role": "system", "content": p.System})
			i++
		}
		set("messages."+strconv.Itoa(i), map[string]string{"role": "user", "content": p.Prompt})
		if p.MaxTokens > 0 {
			set("max_tokens", p.MaxTokens)
		}
	}
	return body, err
}

var buildFormats = []Format{FormatOpenAI, FormatAnthropic, FormatGemini}

// checkSameBuild fails t if Build and the reference differ for p.
func checkSameBuild(t *testing.T, p Prompt) {
	t.Helper()
	for _, f := range buildFormats {
		want, err := buildBySJSON(p, f)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		got, err := p.Build(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s %#v:\n got %s\nwant %s", f, p, got, want)
		}
	}
}

// pieces are the parts the corpus draws strings from: everything either
// encoder treats specially (quotes, backslashes, control characters, HTML
// characters, U+2028/9, invalid UTF-8, multi-byte runes) and plain text.
var pieces = []string{
	"", "a", "Tell me one fact", " ", "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
	"<", ">", "&", "<b>&amp;</b>", "\u2028", "\u2029", "é", "日本語", "😀", "\xff", "\xe2\x82", "\xc3",
	"{", "}", "[", "]", ":", ",", "/", "\\u0041", "model", "messages.0", "#", "*", "?", "|", "@",
}

func randomString(r *rand.Rand) string {
	var b []byte
	for range r.IntN(6) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

// TestBuildMatchesReference compares the builder with the field-by-field
// build over a seeded corpus of 20,000 prompts.
func TestBuildMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 1))
	for range 20000 {
		p := Prompt{System: randomString(r), Prompt: randomString(r), Model: randomString(r), MaxTokens: r.IntN(5) - 1}
		if r.IntN(3) == 0 {
			p.System = ""
		}
		if r.IntN(2) == 0 {
			p.MaxTokens = r.IntN(100000)
		}
		checkSameBuild(t, p)
	}
}

// TestAppendJSONStringMatchesEncoding: every byte pair and the special
// runes encode as encoding/json encodes them.
func TestAppendJSONStringMatchesEncoding(t *testing.T) {
	check := func(s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
	}
	for a := range 256 {
		for b := range 256 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	for _, s := range []string{"\u2028\u2029", "a\u2028b", string(utf8.RuneError), "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		check(s)
	}
}

func FuzzBuild(f *testing.F) {
	f.Add("sys", "Tell me one fact about the number 7.", "gpt-4o-mini", 64)
	f.Add("", "<b>\u2028\xff\"\\\n", "m\"", 0)
	f.Fuzz(func(t *testing.T, system, prompt, model string, maxTokens int) {
		checkSameBuild(t, Prompt{System: system, Prompt: prompt, Model: model, MaxTokens: maxTokens})
	})
}

func BenchmarkBuild(b *testing.B) {
	p := Prompt{Prompt: "Tell me one fact about the number 123456.", Model: "gpt-4o-mini", MaxTokens: 64}
	for i, f := range buildFormats {
		name := []string{"openai", "anthropic", "gemini"}[i]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Build(f)
			}
		})
		b.Run(name+"/sjson", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buildBySJSON(p, f)
			}
		})
	}
}
