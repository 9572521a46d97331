package mock

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/llmrun/llmrun/internal/utf8cut"
)

// CountTokens is the mock's token counting rule: one token per started group
// of four bytes, ceil(len(s)/4), so "" is 0 tokens, "abcd" is 1 and "abcde"
// is 2. The mock uses it for usage figures and for its rate limits.
func CountTokens(s string) int { return tokensOf(len(s)) }

// tokensOf is CountTokens of any text of n bytes.
func tokensOf(n int) int { return (n + 3) / 4 }

// messageOverhead is the fixed token count added per message (and per
// system prompt) to the prompt/input token figure, as real tokenizers add
// role and separator tokens.
const messageOverhead = 4

// turn counts one message of role and text toward req's input tokens and
// appends it to prompt, the conversation as the prompt cache sees it: role
// and text, each NUL-terminated.
func (req *request) turn(prompt []byte, role, text string) []byte {
	req.inTokens += CountTokens(text) + messageOverhead
	return append(append(append(append(prompt, role...), 0), text...), 0)
}

// answerWords is the vocabulary of the pseudo-random part of an answer.
// It is never modified.
var answerWords = [...]string{
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
	"quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
	"yankee", "zulu", "amber", "basalt", "cobalt", "dune", "ember", "fjord",
	"granite", "harbor", "island", "jasper", "kelp", "lagoon", "meadow", "nectar",
	"orchid", "pebble", "quartz", "river", "summit", "tundra", "umber", "valley",
	"willow", "zephyr", "lantern", "compass", "anchor", "beacon", "canyon", "delta",
	"estuary", "forest", "glacier", "horizon", "inlet", "jungle", "knoll", "ledge",
}

// Answer returns the mock's deterministic answer to a user prompt:
// "Answer to <up to 5 first words of the prompt>: " followed by 8 to 24
// words drawn from a fixed vocabulary by a generator seeded with a hash of
// the prompt, ending with ".". With maxTokens > 0 the text is cut to at most
// maxTokens tokens by the CountTokens rule (maxTokens*4 bytes, backed off to
// a UTF-8 boundary). The result depends on nothing else.
func Answer(prompt string, maxTokens int) string {
	text, _ := answer(prompt, maxTokens, 0)
	return text
}

// AnswerWords is Answer with exactly words words after the head instead of
// 8 to 24 (words <= 0: Answer's), the answer of a server whose
// Config.AnswerWords is words. Its words are drawn as Answer's are, so the
// first words of both agree.
func AnswerWords(prompt string, maxTokens, words int) string {
	text, _ := answer(prompt, maxTokens, words)
	return text
}

// answer is AnswerWords that also reports whether the text was cut by
// maxTokens.
func answer(prompt string, maxTokens, nWords int) (string, bool) {
	h := fnv.New128a()
	h.Write([]byte(prompt))
	sum := h.Sum(nil)
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:])))

	var b strings.Builder
	words := strings.Fields(prompt)
	if len(words) == 0 {
		b.WriteString("Answer: ")
	} else {
		head := strings.Join(words[:min(5, len(words))], " ")
		b.WriteString("Answer to ")
		b.WriteString(utf8cut.Prefix(head, 40))
		b.WriteString(": ")
	}
	n := 8 + rng.IntN(17)
	if nWords > 0 {
		n = nWords
	}
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(answerWords[rng.IntN(len(answerWords))])
	}
	b.WriteByte('.')
	text := b.String()
	if maxTokens > 0 && CountTokens(text) > maxTokens {
		return utf8cut.Prefix(text, maxTokens*4), true
	}
	return text, false
}

// pieces splits text into the units a stream sends: runs of about four
// bytes (one CountTokens token), each extended to the next UTF-8 boundary.
// Joined, they give text back.
func pieces(text string) []string {
	var out []string
	for len(text) > 0 {
		n := min(4, len(text))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}
