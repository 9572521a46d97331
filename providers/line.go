package providers

import "github.com/tidwall/gjson"

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

// LineMembers are the members of an input line a LineShape's Endpoint
// reads.
type LineMembers struct {
	Method, URL gjson.Result
	// Request is the member the shape's Key names, a JSON object.
	Request gjson.Result
}
