package retry

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrRejected is wrapped by every error Guard.Check returns.
var ErrRejected = errors.New("answer rejected")

// Guard decides whether an answer's text is good enough to accept
// (--require-json, --json-schema, --min-chars). The zero Guard accepts
// everything. A Guard is safe for concurrent use.
//
// JSON checks accept the content either bare or wrapped in one Markdown
// code fence (```json … ``` or ``` … ```) with only white space around it,
// because models often fence JSON even when asked not to and retrying them
// rarely helps. The output keeps the text as the model wrote it.
type Guard struct {
	// RequireJSON requires the content to be one JSON value.
	RequireJSON bool
	// Schema, if set, requires the content to be JSON valid against it
	// (see LoadSchema).
	Schema *jsonschema.Schema
	// MinChars requires at least this many characters (runes), not
	// counting leading and trailing white space.
	MinChars int
}

// LoadSchema compiles the JSON Schema in file path (any draft the library
// knows; relative $refs resolve against the file; nothing is fetched over
// the network).
func LoadSchema(path string) (*jsonschema.Schema, error) {
	s, err := jsonschema.NewCompiler().Compile(path)
	if err != nil {
		return nil, fmt.Errorf("retry: json schema %s: %w", path, err)
	}
	return s, nil
}

// Check returns nil if text passes every check the guard has, otherwise an
// error wrapping ErrRejected that says which check failed.
func (g Guard) Check(text string) error {
	if g.MinChars > 0 {
		if n := utf8.RuneCountInString(strings.TrimSpace(text)); n < g.MinChars {
			return fmt.Errorf("%w: %d characters, want at least %d", ErrRejected, n, g.MinChars)
		}
	}
	if !g.RequireJSON && g.Schema == nil {
		return nil
	}
	body := unfence(text)
	if !json.Valid([]byte(body)) {
		return fmt.Errorf("%w: not JSON", ErrRejected)
	}
	if g.Schema == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrRejected, err)
	}
	if err := g.Schema.Validate(v); err != nil {
		return fmt.Errorf("%w: does not match the JSON schema: %s", ErrRejected, oneLine(err))
	}
	return nil
}

// oneLine turns the library's indented, multi-line validation error into
// one line of at most 5 causes, sorted (the library's order varies from
// run to run), without the schema's file URL.
func oneLine(err error) string {
	var parts []string
	for line := range strings.Lines(err.Error()) {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		if line != "" && !strings.HasPrefix(line, "jsonschema validation failed") {
			parts = append(parts, line)
		}
	}
	if len(parts) == 0 {
		return err.Error()
	}
	slices.Sort(parts)
	if len(parts) > 5 {
		parts = append(parts[:5], "…")
	}
	return strings.Join(parts, "; ")
}

// unfence returns the inside of one Markdown code fence around text (its
// info string, such as "json", dropped), or text itself when it is not
// fenced.
func unfence(text string) string {
	s := strings.TrimSpace(text)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return text
	}
	inner := s[3 : len(s)-3]
	nl := strings.IndexByte(inner, '\n')
	if nl < 0 {
		return text
	}
	if info := strings.TrimSpace(inner[:nl]); strings.ContainsAny(info, " `{[\"") {
		return text
	}
	if strings.Contains(inner[nl+1:], "```") {
		return text
	}
	return inner[nl+1:]
}
