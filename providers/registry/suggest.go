package registry

// aliases are names people reach for that are not a provider's name:
// the product or company for the wire format llmrun calls it by.
var aliases = map[string]string{
	"claude": "anthropic", "google": "gemini", "vertex": "gemini", "gpt": "openai", "chatgpt": "openai",
	"azure-openai": "azure", "aoai": "azure", "vllm": "openai", "ollama": "openai", "openrouter": "openai",
	"litellm": "openai", "llamacpp": "openai", "llama.cpp": "openai",
}

// suggest is the provider name meant by a name that is none: an alias,
// or a name within two edits (a slip: "opneai"); "" when nothing is close.
func suggest(name string) string {
	if a, ok := aliases[name]; ok {
		return a
	}
	best, bestD := "", 3
	for _, n := range Names() {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
