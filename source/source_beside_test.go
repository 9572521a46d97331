package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// Each shape's request member, as it is written in a line.
var shapeMembers = map[string]string{
	"body":    `"body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"from body"}]}`,
	"params":  `"params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"from params"}]}`,
	"request": `"request":{"contents":[{"parts":[{"text":"from request"}]}]}`,
}

// TestSimpleFieldsBesideBatchShapeAreAnInputError: a line in a batch shape
// that also holds a simple line's request fields (a top-level model beside
// body, say) is refused at the check with its file and line, the member
// and each field named, whatever the provider: the fields would not be
// sent, and the user reads the line as asking for them.
func TestSimpleFieldsBesideBatchShapeAreAnInputError(t *testing.T) {
	for member, m := range shapeMembers {
		for _, extra := range []struct {
			members string
			names   []string
		}{
			{`"model":"gpt-4o"`, []string{"model"}},
			{`"prompt":"hi"`, []string{"prompt"}},
			{`"system":"be brief"`, []string{"system"}},
			{`"max_tokens":64`, []string{"max_tokens"}},
			{`"max_tokens":"64"`, []string{"max_tokens"}}, // refused however it is written
			{`"model":"gpt-4o","prompt":"hi","priority":2,"system":""`, []string{"prompt", "system", "model"}},
		} {
			line := `{"custom_id":"x",` + extra.members + `,` + m + `}`
			for _, f := range []providers.Format{providers.FormatOpenAI, providers.FormatAnthropic, providers.FormatGemini} {
				dir := t.TempDir()
				path := filepath.Join(dir, "in.jsonl")
				os.WriteFile(path, []byte(`{"custom_id":"ok","prompt":"hi"}`+"\n"+line+"\n"), 0o644)
				p := Parser{Format: f, Defaults: LineDefaults{Model: "m"}}
				_, err := (&Source{Path: path, Parser: p}).Check()
				var ie *InputError
				if !errors.As(err, &ie) || ie.Path != path || ie.Line != 2 ||
					!strings.Contains(ie.Msg, member) || !strings.Contains(ie.Msg, strings.Join(extra.names, ", ")+" (simple-line fields)") {
					t.Errorf("%v: %s: Check = %v; want %s:2 naming %s and %v", f, line, err, path, member, extra.names)
				}
			}
		}
	}
}

// TestBatchLinesKeepTheirOwnMembers: beside a batch shape's request the
// members batch lines carry are accepted as before (custom_id, method,
// url, key, priority, tags), and so are a simple field that is null and a
// member llmrun does not read (ignored, as on any line); the request sent
// is the member's. Simple lines and template records are not batch lines.
func TestBatchLinesKeepTheirOwnMembers(t *testing.T) {
	lines := []string{
		`{"custom_id":"a","method":"POST","url":"/v1/chat/completions",` + shapeMembers["body"] + `,"priority":"high","tags":{"team":"x"}}`,
		`{"custom_id":"b",` + shapeMembers["params"] + `,"priority":3,"tags":{"n":1}}`,
		`{"key":"c",` + shapeMembers["request"] + `,"priority":-1}`,
		`{"custom_id":"d",` + shapeMembers["body"] + `,"model":null,"prompt":null,"system":null,"max_tokens":null}`,
		`{"custom_id":"e",` + shapeMembers["params"] + `,"messages":[{"role":"user","content":"ignored"}],"temperature":2,"extra":{"model":"y"}}`,
		`{"custom_id":"f","prompt":"hi","system":"s","model":"gpt-4o","max_tokens":9,"priority":1,"tags":{"t":"v"}}`,
	}
	for _, f := range []providers.Format{providers.FormatOpenAI, providers.FormatAnthropic, providers.FormatGemini} {
		p := Parser{Format: f, Defaults: LineDefaults{Model: "m"}}
		for i, line := range lines {
			req, err := p.Parse([]byte(line), i+1)
			if err != nil {
				t.Errorf("%v: %s: %v", f, line, err)
				continue
			}
			body := string(req.Body)
			if strings.Contains(body, "ignored") || strings.Contains(body, `"y"`) || strings.Contains(body, "temperature") {
				t.Errorf("%v: %s: sent %s, with a member llmrun does not read", f, line, body)
			}
		}
	}
	// A template's records are data, whatever their fields are called.
	tmpl, err := ParseTemplate("t", "{{.prompt}} / {{.body}}")
	if err != nil {
		t.Fatal(err)
	}
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}, Template: tmpl}
	req, err := p.Parse([]byte(`{"custom_id":"r","body":"an email","prompt":"summarise","model":"not read"}`), 1)
	if err != nil || !strings.Contains(gjson.GetBytes(req.Body, "messages.0.content").String(), "summarise / an email") {
		t.Errorf("template record: %v", err)
	}
}
