package providers

import (
	"strconv"

	"github.com/tidwall/sjson"
)

// Prompt is a simple input line: a prompt with an optional system text.
type Prompt struct {
	System    string
	Prompt    string
	Model     string
	MaxTokens int
}

// Build shapes a simple prompt into a request body of format f.
func (p Prompt) Build(f Format) ([]byte, error) {
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
