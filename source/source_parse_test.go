package source

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
)

// parseReference is Parser.parseValid as it was before fieldsOf and the
// simple-line path: a root.Get per member, every body through translation,
// fillDefaults and the conversation checks. The parser must agree with it
// on every line: same request (fingerprints hash the body) or same error.
func (p *Parser) parseReference(line []byte, lineNo int) (*providers.Request, error) {
	if !gjson.ValidBytes(line) {
		return nil, errors.New("not valid JSON")
	}
	root := gjson.ParseBytes(line)
	if !root.IsObject() {
		return nil, errors.New("not a JSON object")
	}
	req := &providers.Request{Line: lineNo, Priority: p.Defaults.Priority}
	if p.Template == nil && bytes.Contains(line, []byte(`"priority"`)) {
		if err := linePriority(root.Get("priority"), req); err != nil {
			return nil, err
		}
	}
	if p.Template == nil {
		if err := lineTags(root.Get("tags"), req); err != nil {
			return nil, err
		}
	}
	idv := root.Get("custom_id")
	if !idv.Exists() {
		idv = root.Get("key")
	}
	switch {
	case !idv.Exists() || idv.Type == gjson.Null:
		req.ID = "line-" + strconv.Itoa(lineNo)
	case idv.Type == gjson.String && idv.Str != "":
		req.ID = idv.Str
	default:
		return nil, errors.New("custom_id (or key) must be a non-empty string")
	}
	if p.Template == nil {
		// A line holding two shapes' requests is in none.
		var held [][2]string
		for _, k := range [][2]string{{"body", "openai"}, {"params", "anthropic"}, {"request", "gemini"}} {
			if present(root.Get(k[0])) {
				held = append(held, k)
			}
		}
		if len(held) > 1 {
			return nil, fmt.Errorf("line holds both %s (%s's batch shape) and %s (%s's): a line is one request in one shape; keep the one meant", held[0][0], held[0][1], held[1][0], held[1][1])
		}
		// A batch line's request is its member: a simple line's field
		// with a value beside it is refused, not ignored.
		if len(held) == 1 {
			var simple []string
			for _, k := range []string{"prompt", "system", "model", "max_tokens"} {
				if v := root.Get(k); v.Exists() && v.Type != gjson.Null {
					simple = append(simple, k)
				}
			}
			if len(simple) > 0 {
				k := held[0][0]
				return nil, fmt.Errorf("line holds %s (%s's batch shape) and %s (simple-line fields), which would not be sent: a batch line's request is all in its %s; write them there, or drop %s to make a simple line", k, held[0][1], strings.Join(simple, ", "), k, k)
			}
		}
	}
	var body []byte
	var from providers.Format
	switch {
	case p.Template != nil:
		text, err := p.Template.render(line)
		if err != nil {
			return nil, err
		}
		sp := providers.Prompt{Prompt: text, System: p.Defaults.System, Model: p.Defaults.Model, MaxTokens: p.Defaults.MaxTokens}
		if body, err = p.buildSimple(&sp); err != nil {
			return nil, err
		}
		from, req.Vars = p.Format, bytes.Clone(line)
	case present(root.Get("body")):
		b := root.Get("body")
		if !b.IsObject() {
			return nil, errors.New("body must be a JSON object")
		}
		u, err := refMethodURL(root)
		if err != nil {
			return nil, err
		}
		if u != nil {
			ep, ok := providers.EndpointOf(*u)
			if !ok {
				return nil, fmt.Errorf("url %q is not supported (want /v1/chat/completions, /v1/responses or /v1/embeddings)", *u)
			}
			req.Endpoint = ep
		}
		body, from = []byte(b.Raw), providers.FormatOpenAI
	case present(root.Get("params")):
		b := root.Get("params")
		if !b.IsObject() {
			return nil, errors.New("params must be a JSON object")
		}
		u, err := refMethodURL(root)
		if err != nil {
			return nil, err
		}
		if u != nil && *u != "/v1/messages" && *u != "/messages" {
			msg := fmt.Sprintf("url %q does not fit a request in Anthropic's shape: params is a Messages request (want /v1/messages, or no url)", *u)
			switch strings.TrimPrefix(*u, "/v1") {
			case "/embeddings":
				msg += `; for embeddings, write an OpenAI batch line: {"url":"/v1/embeddings","body":{"model":…,"input":…}}`
			case "/responses":
				msg += `; for responses, write an OpenAI batch line: {"url":"/v1/responses","body":{"model":…,"input":…}}`
			}
			return nil, errors.New(msg)
		}
		body, from = []byte(b.Raw), providers.FormatAnthropic
	case present(root.Get("request")):
		b := root.Get("request")
		if !b.IsObject() {
			return nil, errors.New("request must be a JSON object")
		}
		u, err := refMethodURL(root)
		if err != nil {
			return nil, err
		}
		if u != nil {
			ep, ok := providers.EndpointOf(*u)
			if !ok || ep == providers.EndpointResponses {
				return nil, fmt.Errorf("url %q does not fit a request in Gemini's shape (want /v1/chat/completions or /v1/embeddings)", *u)
			}
			req.Endpoint = ep
		} else if !b.Get("contents").Exists() && (b.Get("content").Exists() || b.Get("requests").Exists()) {
			req.Endpoint = providers.EndpointEmbeddings
		}
		body, from = []byte(b.Raw), providers.FormatGemini
	case root.Get("prompt").Exists():
		// A simple line is a chat request: a url asking for another
		// endpoint is refused, not run as chat.
		u, err := refMethodURL(root)
		if err != nil {
			return nil, err
		}
		if u != nil && strings.TrimPrefix(*u, "/v1") != "/chat/completions" {
			const simple = "on a simple line: a simple line (prompt, system, model, max_tokens) is a chat request"
			switch strings.TrimPrefix(*u, "/v1") {
			case "/embeddings", "/responses":
				path := "/v1" + strings.TrimPrefix(*u, "/v1")
				return nil, fmt.Errorf(`url %q %s; for %s, write an OpenAI batch line: {"url":"%s","body":{"model":…,"input":…}}`, *u, simple, path[4:], path)
			}
			return nil, fmt.Errorf("url %q %s (url /v1/chat/completions, or none)", *u, simple)
		}
		pr := root.Get("prompt")
		if pr.Type != gjson.String || pr.Str == "" {
			return nil, errors.New("prompt must be a non-empty string")
		}
		sp := providers.Prompt{Prompt: pr.Str, System: p.Defaults.System, Model: p.Defaults.Model, MaxTokens: p.Defaults.MaxTokens}
		if v := root.Get("system"); v.Exists() {
			sp.System = v.String()
		}
		if v := root.Get("model"); v.Exists() {
			sp.Model = v.String()
		}
		if v := root.Get("max_tokens"); v.Exists() {
			if v.Type != gjson.Number || v.Int() <= 0 {
				return nil, errors.New("max_tokens must be a positive integer")
			}
			sp.MaxTokens = int(v.Int())
		}
		if body, err = p.buildSimple(&sp); err != nil {
			return nil, err
		}
		from = p.Format
	default:
		return nil, errors.New("line has no prompt, body, params or request")
	}
	if err := checkBody(body, req.Endpoint, from); err != nil {
		return nil, err
	}
	if from != p.Format {
		var err error
		if body, req.Endpoint, err = providers.TranslateEndpoint(body, from, req.Endpoint, p.Format); err != nil {
			return nil, fmt.Errorf("translating %s request to %s: %w", from, p.Format, err)
		}
	}
	body, err := p.fillDefaults(body)
	if err != nil {
		return nil, err
	}
	req.Body = body
	req.Model = gjson.GetBytes(body, "model").String()
	req.MaxTokens = providers.MaxTokensOf(body)
	if err := checkBody(body, req.Endpoint, p.Format); err != nil {
		return nil, err
	}
	return req, nil
}

// parsers are the settings the comparison runs each line under.
func parsers() []Parser {
	var ps []Parser
	for _, f := range []providers.Format{providers.FormatOpenAI, providers.FormatAnthropic, providers.FormatGemini} {
		for _, d := range []LineDefaults{{}, {Model: "m"}, {Model: "dm", MaxTokens: 77, System: "be <brief>", Priority: 2}} {
			ps = append(ps, Parser{Format: f, Defaults: d})
		}
	}
	return ps
}

// checkSameParse fails t if the parser and the reference disagree on line.
func checkSameParse(t *testing.T, line []byte) {
	t.Helper()
	if dup, ok := jsonvalid.DuplicateKey(line); ok && dup != "" {
		// Refused before any member is read (the reference would read
		// the first of the repeated keys).
		for _, p := range parsers() {
			if _, err := p.parseValid(line, 7); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q appears twice", dup)) {
				t.Fatalf("%v: %s: error %v, want the repeated key %q", p.Format, line, err, dup)
			}
		}
		return
	}
	for _, p := range parsers() {
		want, werr := p.parseReference(line, 7)
		got, gerr := p.parseValid(line, 7)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%v %+v: %s\nerror %v, reference %v", p.Format, p.Defaults, line, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if got.ID != want.ID || got.Line != want.Line || got.Priority != want.Priority || got.Model != want.Model || got.MaxTokens != want.MaxTokens ||
			got.Endpoint != want.Endpoint || !bytes.Equal(got.Body, want.Body) || !bytes.Equal(got.Vars, want.Vars) {
			t.Fatalf("%v %+v: %s\n got %+v body %s\nwant %+v body %s", p.Format, p.Defaults, line, got, got.Body, want, want.Body)
		}
	}
}

// simpleMembers are the members corpus lines are made of, valid and not.
var simpleMembers = []string{
	`"custom_id":"r1"`, `"custom_id":"r2"`, `"custom_id":""`, `"custom_id":null`, `"custom_id":5`, `"key":"k1"`,
	`"prompt":"Tell me one fact about the number 7."`, `"prompt":"<b>\"q\"\n\u2028é😀</b>"`, `"prompt":""`, `"prompt":3`,
	`"system":"be brief"`, `"system":"a & b"`, `"system":12`, `"system":null`,
	`"model":"gpt-4o-mini"`, `"model":"claude-x"`, `"model":""`, `"model":7`, `"model":{"a":1}`,
	`"max_tokens":64`, `"max_tokens":0`, `"max_tokens":-1`, `"max_tokens":"5"`, `"max_tokens":1.5`,
	`"body":{"model":"m","messages":[{"role":"user","content":"x"}]}`, `"body":{"messages":[{"role":"user","content":"x"}]}`,
	`"body":null`, `"method":"GET"`, `"url":"/v1/embeddings"`, `"url":"/v1/chat/completions"`,
	`"params":{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, `"params":{"messages":[{"role":"user","content":"y"}]}`,
	`"request":{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`, `"extra":[1,{"prompt":"nested"}]`,
	`"request":{"content":{"parts":[{"text":"x"}]}}`, `"request":{"requests":[{"content":{"parts":[{"text":"y"}]}}]}`, `"url":"/v1/responses"`,
	`"custom\u005fid":"esc"`, `"prompt":"second"`, `"priority":3`, `"priority":"high"`, `"priority":"urgent"`, `"priority":1.5`, `"priority":null`,
	`"model":null`, `"prompt":null`, `"max_tokens":null`, `"tags":{"t":"v"}`,
	`"method":"POST"`, `"method":null`, `"method":5`, `"url":null`, `"url":7`, `"url":"/v1/messages"`, `"url":"/messages"`,
	`"url":"/embeddings"`, `"url":"/v1/images/generations"`, `"url":"/chat/completions"`,
}

// TestParseMatchesReference compares the parser with the reference over a
// seeded corpus of 5,000 lines made of valid and invalid members, under
// every format and set of defaults.
func TestParseMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var b bytes.Buffer
		b.WriteByte('{')
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(simpleMembers[r.IntN(len(simpleMembers))])
		}
		b.WriteByte('}')
		checkSameParse(t, b.Bytes())
	}
	checkSameParse(t, []byte(`[1]`))
	checkSameParse(t, []byte(`{"prompt":"x"`))
}

func FuzzParseMatchesReference(f *testing.F) {
	f.Add([]byte(`{"custom_id":"a","prompt":"hi","system":"s","model":"x","max_tokens":3}`))
	f.Add([]byte(`{"custom_id":"a","body":{"model":"m","messages":[{"role":"user","content":"x"}]}}`))
	f.Add([]byte(`{"key":"g","request":{"contents":[{"role":"user","parts":[{"text":"x"}]}]}}`))
	f.Add([]byte(`{"custom_id":"a","model":"gpt-4o","body":{"model":"m","messages":[{"role":"user","content":"x"}]},"prompt":null}`))
	f.Add([]byte(`{"custom_id":"a","url":"/v1/embeddings","prompt":"x"}`))
	f.Add([]byte(`{"custom_id":"a","method":"GET","url":"/v1/messages","params":{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkSameParse(t, line)
	})
}

// present is a member with a value: a null one is read as absent, for a
// request member as for a simple line's field beside one.
func present(v gjson.Result) bool { return v.Exists() && v.Type != gjson.Null }

// refMethodURL refuses a method other than POST (null is none) and gives
// the line's url, nil when it has none (or a null one).
func refMethodURL(root gjson.Result) (*string, error) {
	switch m := root.Get("method"); {
	case !m.Exists() || m.Type == gjson.Null || m.Type == gjson.String && m.Str == "POST":
	case m.Type == gjson.String:
		return nil, fmt.Errorf("method %q is not supported (only POST)", m.Str)
	default:
		return nil, fmt.Errorf("method %s is not supported (only POST)", m.Raw)
	}
	u := root.Get("url")
	if !u.Exists() || u.Type == gjson.Null {
		return nil, nil
	}
	if u.Type != gjson.String {
		return nil, fmt.Errorf("url must be a string, not %s", u.Raw)
	}
	return &u.Str, nil
}
