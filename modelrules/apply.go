package modelrules

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Error is a body its model's family is known to refuse: the rule and how
// to fix the request.
type Error struct {
	Model, Family string
	Rule, Fix     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("model %s (%s family): %s: %s", e.Model, e.Family, e.Rule, e.Fix)
}

// Change is one equivalent rewrite Apply made. Key is the same for every
// body rewritten the same way, so a run can say it once.
type Change struct {
	Key, Msg string
}

// Endpoint kinds Apply tells apart.
const (
	Chat       = "chat"
	Responses  = "responses"
	Embeddings = "embeddings"
)

// Apply checks body, a request of wire format format ("openai",
// "anthropic", "gemini") for the endpoint kind ep (Chat, Responses,
// Embeddings), against the rules of its model's family. It returns the
// body with the equivalent rewrites made, what it rewrote, and an *Error
// for what the family refuses that has no equivalent. A model of no
// family, and a format the family's rules are not written for, pass as
// they are.
func (r *Rules) Apply(body []byte, format, ep string) ([]byte, []Change, error) {
	if ep == Embeddings || format == "gemini" {
		return body, nil, nil
	}
	model := gjson.GetBytes(body, "model").String()
	f := r.Family(model)
	if f == nil {
		return body, nil, nil
	}
	a := applier{f: f, model: model, body: body}
	if format == "openai" && ep == Chat {
		a.tokenField()
		a.jsonWord()
	}
	a.fixed()
	a.exclusive()
	a.max()
	return a.body, a.changes, a.err
}

// applier carries one body through the rules, keeping the first error.
type applier struct {
	f       *Family
	model   string
	body    []byte
	changes []Change
	err     error
}

func (a *applier) refuse(rule, fix string) {
	if a.err == nil {
		a.err = &Error{Model: a.model, Family: a.f.Name, Rule: rule, Fix: fix}
	}
}

func (a *applier) get(path string) gjson.Result {
	return gjson.GetBytes(a.body, path)
}

// set reports failure to rewrite as a refusal: the body stays unsent.
func (a *applier) edit(b []byte, err error) {
	if err != nil {
		a.refuse("could not rewrite the body", err.Error())
		return
	}
	a.body = b
}

// present says whether a parameter is given (null counts as absent, as
// the APIs read it).
func present(v gjson.Result) bool { return v.Exists() && v.Type != gjson.Null }

func (a *applier) tokenField() {
	if a.err != nil || a.f.TokenField != "max_completion_tokens" {
		return
	}
	old := a.get("max_tokens")
	if !present(old) {
		return
	}
	if present(a.get("max_completion_tokens")) {
		a.refuse("max_tokens is not accepted", "remove max_tokens (the body also sets max_completion_tokens)")
		return
	}
	a.edit(sjson.DeleteBytes(a.body, "max_tokens"))
	if a.err == nil {
		a.edit(sjson.SetRawBytes(a.body, "max_completion_tokens", []byte(old.Raw)))
	}
	a.changes = append(a.changes, Change{Key: a.f.Name + ":max_completion_tokens",
		Msg: fmt.Sprintf("%s models (%s) refuse max_tokens: sending it as max_completion_tokens, the same cap", a.f.Name, a.model)})
}

// fixed refuses a fixed parameter given at any value but its own, unless
// the family's condition holds.
func (a *applier) fixed() {
	if a.err != nil || len(a.f.Fixed) == 0 {
		return
	}
	if c := a.f.FixedUnless; c != nil {
		if v := a.get(c.Field); present(v) && jsonEqual([]byte(v.Raw), c.Value) {
			return
		}
	}
	for _, k := range a.f.fixedParams() {
		v := a.get(k)
		if !present(v) {
			continue
		}
		want := a.f.Fixed[k]
		if !jsonEqual([]byte(v.Raw), want) {
			fix := fmt.Sprintf("remove %s, or set it to %s", k, want)
			if c := a.f.FixedUnless; c != nil {
				fix += fmt.Sprintf(", or set %s to %s", c.Field, c.Value)
			}
			a.refuse(fmt.Sprintf("takes only the default %s (%s), not %s", k, want, v.Raw), fix)
			return
		}
		// The default itself is accepted, and kept: leaving it out would
		// change the body, and with it the fingerprint of a request an
		// earlier run already answered.
	}
}

func (a *applier) exclusive() {
	for _, g := range a.f.Exclusive {
		var set []string
		for _, k := range g {
			if present(a.get(k)) {
				set = append(set, k)
			}
		}
		if len(set) > 1 {
			a.refuse(strings.Join(set, " and ")+" cannot both be specified",
				"keep one of "+strings.Join(set, " and ")+" (or send the line to another model)")
			return
		}
	}
}

func (a *applier) max() {
	keys := make([]string, 0, len(a.f.Max))
	for k := range a.f.Max {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := a.get(k); v.Type == gjson.Number && v.Num > a.f.Max[k] {
			a.refuse(fmt.Sprintf("%s is at most %g, not %s", k, a.f.Max[k], v.Raw), fmt.Sprintf("set %s to %g or less", k, a.f.Max[k]))
			return
		}
	}
}

// jsonWord refuses JSON mode without the word "json" in the messages,
// which OpenAI answers with a 400.
func (a *applier) jsonWord() {
	if a.err != nil || !a.f.JSONNeedsWord || a.get("response_format.type").String() != "json_object" {
		return
	}
	if MessagesMention(a.get("messages"), "json") {
		return
	}
	a.refuse(`response_format json_object needs the word "json" in the messages`,
		`say in a message (the system message, say) that the answer is JSON`)
}

// MessagesMention reports whether any text of Chat Completions messages
// contains word, in any case.
func MessagesMention(messages gjson.Result, word string) bool {
	found := false
	messages.ForEach(func(_, m gjson.Result) bool {
		c := m.Get("content")
		if c.Type == gjson.String {
			found = containsFold(c.Str, word)
		} else {
			c.ForEach(func(_, p gjson.Result) bool {
				found = containsFold(p.Get("text").Str, word)
				return !found
			})
		}
		return !found
	})
	return found
}

func containsFold(s, word string) bool {
	return strings.Contains(strings.ToLower(s), word)
}

// jsonEqual compares two JSON values by meaning (1 and 1.0 are equal).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
