package retry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tidwall/gjson"
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
	Schema *jsonschema.Resolved
	// MinChars requires at least this many characters (runes), not
	// counting leading and trailing white space.
	MinChars int
}

// LoadSchema reads and resolves the JSON Schema in file path (draft 2020-12
// or draft-07; relative $refs resolve against the file; nothing is fetched
// over the network).
//
// The library is google/jsonschema-go: the one used before compiled the
// meta-schemas of five drafts when the process started, whether or not a
// schema was ever given (20 ms of every run's CPU).
func LoadSchema(path string) (*jsonschema.Resolved, error) {
	fail := func(err error) error { return fmt.Errorf("retry: json schema %s: %w", path, err) }
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fail(err)
	}
	s, err := readSchema(abs)
	if err != nil {
		return nil, fail(err)
	}
	if !knownDraft(s.Schema) {
		return nil, fail(fmt.Errorf("$schema %q: only draft 2020-12 and draft-07 are supported", s.Schema))
	}
	base := &url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: base.String(), Loader: loadLocal})
	if err != nil {
		return nil, fail(err)
	}
	return rs, nil
}

// knownDraft reports whether a $schema names a draft the library validates
// ("" is 2020-12).
func knownDraft(s string) bool {
	switch strings.TrimSuffix(s, "#") {
	case "", "https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema":
		return true
	}
	return false
}

// loadLocal loads a $ref's file; any other URL is refused.
func loadLocal(u *url.URL) (*jsonschema.Schema, error) {
	if u.Scheme != "file" {
		return nil, fmt.Errorf("$ref %s: only local files are read", u)
	}
	return readSchema(filepath.FromSlash(u.Path))
}

// readSchema reads and checks one schema file. Its errors do not name the
// file: LoadSchema names the file given, the library the $ref it loads.

func readSchema(path string) (*jsonschema.Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if err := checkKeywords(gjson.ParseBytes(b), ""); err != nil {
		return nil, err
	}
	return &s, nil
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
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrRejected, err)
	}
	if err := g.Schema.Validate(v); err != nil {
		return fmt.Errorf("%w: does not match the JSON schema: %s", ErrRejected, oneLine(err))
	}
	return nil
}

// oneLine turns the library's validation error into one line without its
// "validating root: " prefixes.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	for {
		t := strings.TrimPrefix(s, "validating root: ")
		if t == s {
			return s
		}
		s = t
	}
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
