package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
)

// Lines holding the request members of two shapes: OpenAI's body with
// Anthropic's params or Gemini's request, and params with request.
var twoShapeLines = map[string]string{
	"body and params":                  `{"custom_id":"a","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"from params"}]},"body":{"model":"gpt-4o","messages":[{"role":"user","content":"from body"}]}}`,
	"body and request":                 `{"key":"b","request":{"contents":[{"parts":[{"text":"from request"}]}]},"body":{"model":"gpt-4o","messages":[{"role":"user","content":"from body"}]}}`,
	"params and request":               `{"custom_id":"c","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"from params"}]},"request":{"contents":[{"parts":[{"text":"from request"}]}]}}`,
	"body, not an object, and request": `{"key":"d","request":{"contents":[{"parts":[{"text":"from request"}]}]},"body":"from body"}`,
}

// TestShapeOfIsHowTheLineIsRead: the format registry.ShapeOf gives a line
// (which picks the provider of a run without --provider) is the format
// the reader reads the line in, and a line ShapeOf refuses the reader
// refuses too, with the same reason; a null member is no member for both.
func TestShapeOfIsHowTheLineIsRead(t *testing.T) {
	lines := map[string]string{
		"openai":    `{"custom_id":"o","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}}`,
		"anthropic": `{"custom_id":"a","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}`,
		"gemini":    `{"key":"g","request":{"contents":[{"parts":[{"text":"hi"}]}]}}`,
		// A null member asks for nothing (a table exported with columns
		// for every shape writes them): the line is in the other shape.
		"openai, params null":              `{"custom_id":"o2","body":{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]},"params":null}`,
		"anthropic, body and request null": `{"custom_id":"a2","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]},"body":null,"request":null}`,
		"simple, body null":                `{"custom_id":"s","prompt":"hi","model":"m","body":null}`,
	}
	for name, line := range twoShapeLines {
		lines[name] = line
	}
	for name, line := range lines {
		shape, serr := registry.ShapeOf([]byte(line))
		p := Parser{Format: registry.Infer(shape, func(string) string { return "" }).Format}
		var f lineFields
		f.read(gjson.Parse(line))
		_, from, err := p.wireBody([]byte(line), &f, &providers.Request{})
		switch _, two := twoShapeLines[name]; {
		case two && (serr == nil || err == nil || serr.Error() != err.Error() || !strings.Contains(err.Error(), "both")):
			t.Errorf("%s: ShapeOf says %v, %v; the reader %v, %v; want both to refuse it", name, shape, serr, from, err)
		case strings.HasPrefix(name, "simple"):
			// A simple line: wireBody leaves it to the simple fields
			// (format 0), which every provider takes (ShapeOf: OpenAI's).
			if serr != nil || err != nil || shape != providers.FormatOpenAI || from != 0 {
				t.Errorf("%s: ShapeOf %v, %v; the reader %v, %v; want a simple line", name, shape, serr, from, err)
			}
		case !two && (serr != nil || err != nil || from != shape):
			t.Errorf("%s: the provider is picked for %v (%v), the line is read as %v (%v)", name, shape, serr, from, err)
		}
	}
}

// TestTwoShapeLineIsAnInputError: the check refuses a line in two shapes
// with its file and line, and Shape, which a run reads the provider's
// format from, refuses a first line in two shapes the same way (blank
// lines before it counted), before any provider is picked.
func TestTwoShapeLineIsAnInputError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.jsonl")
	ok := `{"custom_id":"ok","prompt":"hi"}`
	os.WriteFile(path, []byte(ok+"\n\n"+twoShapeLines["body and params"]+"\n"), 0o644)
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	var ie *InputError
	_, err := (&Source{Path: path, Parser: p}).Check()
	if !errors.As(err, &ie) || ie.Line != 3 || ie.Path != path || !strings.Contains(ie.Msg, "body") || !strings.Contains(ie.Msg, "params") {
		t.Errorf("Check = %v; want %s:3 naming body and params", err, path)
	}
	if f, err := (&Source{Path: path}).Shape(); f != providers.FormatOpenAI || err != nil {
		t.Errorf("Shape of a simple first line = %v, %v", f, err)
	}

	os.WriteFile(path, []byte("\n"+twoShapeLines["body and request"]+"\n"+ok+"\n"), 0o644)
	if _, err := (&Source{Path: path}).Shape(); !errors.As(err, &ie) || ie.Line != 2 || ie.Path != path || !strings.Contains(ie.Msg, "request") {
		t.Errorf("Shape = %v; want %s:2 naming body and request", err, path)
	}
	os.WriteFile(path, []byte("\n"+twoShapeLines["params and request"][:20]+"\n"), 0o644)
	if f, err := (&Source{Path: path}).Shape(); f != providers.FormatOpenAI || err != nil {
		t.Errorf("Shape of a first line that is not JSON = %v, %v; the check reports it", f, err)
	}
}
