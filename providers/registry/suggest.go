package registry

import "github.com/llmrun/llmrun/internal/editdist"

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
		if d := editdist.Distance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
