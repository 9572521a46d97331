package providers

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// LineShape is an input-line shape a wire format claims: a line of that
// format's own batch file (OpenAI's {custom_id, method, url, body},
// Anthropic's {custom_id, params}, Gemini's {key, request}). Each format
// package declares its own (openai.Line, anthropic.Line, gemini.Line);
// providers/registry lists them, and the input reader asks that list which
// shape a line is in, so it never names a format.
type LineShape struct {
	// Format is the wire format of the request such a line carries.
	Format Format
	// Key is the line's member holding the request, a JSON object.
	Key string
	// Endpoint checks the line's other members and says which endpoint
	// its request is for; nil means chat, whatever else the line holds.
	Endpoint func(l LineMembers) (Endpoint, error)
}

// Present reports an input line's member with a value: a null member
// (a table exported with a column for every shape writes them) asks for
// nothing and is read as absent, for the line's shape as for its fields.
func Present(v gjson.Result) bool { return v.Exists() && v.Type != gjson.Null }

// LineMembers are the members of an input line a LineShape's Endpoint
// reads.
type LineMembers struct {
	Method, URL gjson.Result
	// Request is the member the shape's Key names, a JSON object.
	Request gjson.Result
}

// Post refuses a method other than POST, the only one a batch line's
// request is sent with: a GET the line asks for would otherwise be sent
// as a POST. A null method asks for nothing, as a null member does.
func (l LineMembers) Post() error {
	m := l.Method
	if !Present(m) || m.Type == gjson.String && m.Str == "POST" {
		return nil
	}
	if m.Type == gjson.String {
		return fmt.Errorf("method %q is not supported (only POST)", m.Str)
	}
	return fmt.Errorf("method %s is not supported (only POST)", m.Raw)
}

// URLPath is the line's url, and whether it names one: a null url names
// none, as a null member does; one that is not a string is an error.
func (l LineMembers) URLPath() (string, bool, error) {
	u := l.URL
	switch {
	case !Present(u):
		return "", false, nil
	case u.Type != gjson.String:
		return "", false, fmt.Errorf("url must be a string, not %s", u.Raw)
	}
	return u.Str, true, nil
}
