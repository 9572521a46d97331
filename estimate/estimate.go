// Package estimate turns request text into token estimates before a
// request is sent: tiktoken for OpenAI-family models, bytes/4 otherwise,
// calibrated online per budget key against the counts providers report,
// and the expected output size per key. The runner asks it what to
// reserve; the limiter only ever sees the resulting numbers.
package estimate

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tiktoken-go/tokenizer"
)

// Estimator calibration and p95 parameters.
const (
	// calibAlpha is the weight of one observation in the calibration ratio
	// (geometric exponential smoothing).
	calibAlpha = 0.2
	// calibMin and calibMax bound the ratio, and one observation's
	// correction, so a single odd response cannot wreck later estimates.
	calibMin, calibMax = 0.2, 5.0
	// outputWindow is how many recent output sizes the p95 is taken over.
	outputWindow = 256
	// outputMinSamples is how many observations ExpectedOutput needs before
	// it trusts the p95 over max_tokens.
	outputMinSamples = 16
	// bytesPerToken is the char-based estimate for models without a known
	// tokenizer: about 4 bytes of English per token for current BPE
	// vocabularies (Claude, Gemini, Llama). It underestimates CJK text; the
	// per-key calibration corrects that after a few responses.
	bytesPerToken = 4
	// exactTokenizeBytes bounds the text tokenized exactly (the tokenizer
	// runs at ~10 MB/s): a longer text is estimated from the tokens per byte
	// of its first exactTokenizeBytes, and calibration absorbs the error.
	exactTokenizeBytes = 32 << 10
)

// Estimator turns request text into input-token estimates, calibrated online
// per key against the usage responses report, and tracks the expected output
// size per key. It is safe for concurrent use; the zero value is not usable,
// use NewEstimator.
type Estimator struct {
	o200k, cl100k lazyCodec
	keys          sync.Map // string → *estKey
	// tokenized counts the texts a tokenizer counted (Tokenized).
	tokenized atomic.Int64
}

type lazyCodec struct {
	once  sync.Once
	enc   tokenizer.Encoding
	codec tokenizer.Codec
}

func (c *lazyCodec) get() tokenizer.Codec {
	c.once.Do(func() {
		c.codec, _ = tokenizer.Get(c.enc) // embedded encodings: cannot fail for o200k/cl100k
	})
	return c.codec
}

// estKey is one key's calibration and output history.
type estKey struct {
	mu    sync.Mutex
	ratio float64 // reported / raw estimate, smoothed; starts at 1
	// calibrated is set by the first observation.
	calibrated bool
	outs       []int64 // ring of recent output sizes
	sorted     []int64 // the same sizes, sorted: the p95 without a sort per response
	next       int
	n          int64 // observations so far
	p95        int64 // cached p95 of outs
}

// NewEstimator returns an Estimator. Tokenizer vocabularies load on first
// use.
func NewEstimator() *Estimator {
	return &Estimator{o200k: lazyCodec{enc: tokenizer.O200kBase}, cl100k: lazyCodec{enc: tokenizer.Cl100kBase}}
}

func (e *Estimator) key(name string) *estKey {
	if k, ok := e.keys.Load(name); ok {
		return k.(*estKey)
	}
	k, _ := e.keys.LoadOrStore(name, &estKey{ratio: 1})
	return k.(*estKey)
}

// encodingFor returns the tiktoken encoding of an OpenAI-family model, or
// nil for others. Provider prefixes ("openai/", "azure/") are ignored.
func (e *Estimator) encodingFor(model string) *lazyCodec {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	switch {
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "chatgpt-4o"),
		strings.HasPrefix(m, "gpt-4.1"), strings.HasPrefix(m, "gpt-4.5"),
		strings.HasPrefix(m, "gpt-5"), strings.HasPrefix(m, "gpt-oss"),
		len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9': // o1, o3, o4-mini, …
		return &e.o200k
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"),
		strings.HasPrefix(m, "text-embedding-"):
		return &e.cl100k
	case strings.HasPrefix(m, "gpt-"): // a newer GPT we do not know yet
		return &e.o200k
	}
	return nil
}

// HasTokenizer reports whether RawInputTokens counts model's text with the
// model's own tokenizer; otherwise the count is bytes/4, an approximation.
func (e *Estimator) HasTokenizer(model string) bool { return e.encodingFor(model) != nil }

// RawInputTokens is the uncalibrated estimate: tiktoken (o200k_base for
// gpt-4o/4.1/5 and o-series, cl100k_base for gpt-3.5/gpt-4) for
// OpenAI-family models, ceil(bytes/4) otherwise. Texts over 32 KiB are
// tokenized up to there and extrapolated by length.
func (e *Estimator) RawInputTokens(model string, text []byte) int64 {
	if c := e.encodingFor(model); c != nil {
		prefix := text
		if len(prefix) > exactTokenizeBytes {
			prefix = prefix[:exactTokenizeBytes]
			if i := bytes.LastIndexAny(prefix[len(prefix)-256:], " \n"); i >= 0 {
				prefix = prefix[:len(prefix)-256+i] // do not split a word
			}
		}
		e.tokenized.Add(1)
		n, err := c.get().Count(string(prefix))
		if err == nil {
			if len(prefix) < len(text) && len(prefix) > 0 {
				return int64(math.Ceil(float64(n) * float64(len(text)) / float64(len(prefix))))
			}
			return int64(n)
		}
	}
	return ByBytes(len(text))
}

// ByBytes is the estimate of n bytes of text without a tokenizer:
// ceil(n/4). Where no limit reads an exact count, the runner reserves
// it for a whole body; the forecast uses it to see whether a prompt is
// near a limit before tokenizing it.
func ByBytes(n int) int64 { return int64((n + bytesPerToken - 1) / bytesPerToken) }

// Tokenized is how many texts RawInputTokens has run a tokenizer over:
// the costly path, which the runner takes only where a count is read.
func (e *Estimator) Tokenized() int64 { return e.tokenized.Load() }

// InputTokens estimates the input tokens of text sent to model under key:
// Calibrate(key, RawInputTokens(model, text)).
func (e *Estimator) InputTokens(key, model string, text []byte) int64 {
	return e.Calibrate(key, e.RawInputTokens(model, text))
}

// Calibrate scales a raw estimate by key's calibration ratio
// (reported/raw, smoothed, starting at 1), rounded up.
func (e *Estimator) Calibrate(key string, raw int64) int64 {
	k := e.key(key)
	k.mu.Lock()
	r := k.ratio
	k.mu.Unlock()
	// The epsilon keeps float noise (100 × 1.3000000000000003) from rounding a
	// whole number up.
	return int64(math.Ceil(float64(raw)*r - 1e-6))
}

// ObserveInput calibrates key: raw is the RawInputTokens estimate of a
// request, reported the input tokens its response counted (those that count
// against the input budget). The ratio moves geometrically toward
// reported/raw, one observation weighing calibAlpha. Because the target is
// measured against the raw estimate, responses to requests estimated
// before an earlier correction do not apply that correction again (a
// burst of such responses cannot overshoot).
func (e *Estimator) ObserveInput(key string, raw, reported int64) {
	if raw <= 0 || reported <= 0 {
		return
	}
	q := min(max(float64(reported)/float64(raw), calibMin), calibMax)
	k := e.key(key)
	k.mu.Lock()
	if !k.calibrated {
		// The first observation is taken whole: it is the best estimate
		// there is, and the requests admitted right after it would
		// otherwise all carry the uncalibrated error.
		k.ratio, k.calibrated = q, true
	} else {
		k.ratio = min(max(math.Pow(k.ratio, 1-calibAlpha)*math.Pow(q, calibAlpha), calibMin), calibMax)
	}
	k.mu.Unlock()
}

// Ratio returns key's current calibration ratio (1 before any observation).
func (e *Estimator) Ratio(key string) float64 {
	k := e.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ratio
}

// ExpectedOutput is what to reserve for a response's output under key: the
// p95 of the last outputWindow observed outputs once there are
// outputMinSamples of them, maxTokens before; never above maxTokens (when
// maxTokens > 0).
func (e *Estimator) ExpectedOutput(key string, maxTokens int64) int64 {
	k := e.key(key)
	k.mu.Lock()
	n, p := k.n, k.p95
	k.mu.Unlock()
	if n < outputMinSamples {
		return maxTokens
	}
	if maxTokens > 0 {
		return min(p, maxTokens)
	}
	return p
}

// ObserveOutput records the output tokens one response reported under key.
func (e *Estimator) ObserveOutput(key string, reported int64) {
	if reported < 0 {
		return
	}
	k := e.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.outs) < outputWindow {
		k.outs = append(k.outs, reported)
	} else {
		old := k.outs[k.next]
		k.outs[k.next] = reported
		k.next = (k.next + 1) % outputWindow
		i, _ := slices.BinarySearch(k.sorted, old)
		k.sorted = slices.Delete(k.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(k.sorted, reported)
	k.sorted = slices.Insert(k.sorted, i, reported)
	k.n++
	if k.n >= outputMinSamples {
		k.p95 = sortedP95(k.sorted)
	}
}

// p95 returns the nearest-rank 95th percentile of xs (not modified).
func p95(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return sortedP95(s)
}

// sortedP95 is p95 of s, which is sorted.
func sortedP95(s []int64) int64 {
	i := int(math.Ceil(0.95*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// SeedRatio sets key's calibration ratio before any response, from a
// count the provider made of sample requests (count_tokens): the opening
// burst is then reserved on the provider's count rather than the raw
// estimate, and reported usage refines it from there as usual.
func (e *Estimator) SeedRatio(key string, ratio float64) {
	if ratio <= 0 || math.IsNaN(ratio) {
		return
	}
	k := e.key(key)
	k.mu.Lock()
	k.ratio, k.calibrated = min(max(ratio, calibMin), calibMax), true
	k.mu.Unlock()
}
