package source

import (
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/modelrules"
	"github.com/llmrun/llmrun/providers"
)

// ModelRules say which model each line is sent as and what its family
// accepts (see modelrules). The zero value changes nothing.
type ModelRules struct {
	// Rules are the model-family rules applied to every body once it is
	// in the provider's format; nil applies none.
	Rules *modelrules.Rules
	// Notices says each kind of rewrite the rules make once per run.
	Notices *modelrules.Notices
	// Override sends every line as Parser.Defaults.Model, whatever model
	// it names (--override-model).
	Override bool
	// Map renames models (the config's model_map): a line naming a key
	// is sent as its value.
	Map map[string]string
	// Serves is the provider whose models the destination serves
	// ("openai", "anthropic", "gemini"; "" for any, as a gateway or a
	// local server may): a line whose model belongs to another
	// provider's family is refused at the check instead of answered 404.
	Serves modelrules.Provider
	// ServesName is how messages name the destination (the --provider).
	ServesName string
}

// model is the model a line naming m is sent as.
func (p *Parser) model(m string) string {
	switch mr := &p.Models; {
	case mr.Override && p.Defaults.Model != "":
		return p.Defaults.Model
	case mr.Map != nil:
		if to, ok := mr.Map[m]; ok {
			return to
		}
	}
	return m
}

// checkFamily refuses a model another provider serves; f is its family.
func (p *Parser) checkFamily(model string, f *modelrules.Family) error {
	mr := &p.Models
	if mr.Serves == "" || f == nil || f.Provider == mr.Serves {
		return nil
	}
	return fmt.Errorf("model %s is %s model but --provider %s serves %s models: did you mean --provider %s? Or set --model with --override-model, or map %s in the config's model_map",
		model, modelrules.ProviderName(f.Provider), cmpName(mr.ServesName, mr.Serves), mr.Serves, f.Provider, model)
}

func cmpName(name, provider string) string {
	if name != "" {
		return name
	}
	return provider
}

// shapeSimple settles a simple line's model and, for a family that takes
// max_completion_tokens, the field its cap is written in.
func (p *Parser) shapeSimple(sp *providers.Prompt) error {
	sp.Model = p.model(sp.Model)
	if p.Models.Rules == nil {
		return nil
	}
	f := p.Models.Rules.Family(sp.Model)
	if err := p.checkFamily(sp.Model, f); err != nil {
		return err
	}
	if !p.Format.TakesCompletionTokens() || sp.MaxTokens <= 0 {
		return nil
	}
	if f != nil && f.TokenField == "max_completion_tokens" {
		sp.CompletionTokens = true
		model := sp.Model
		p.Models.Notices.Once(f.Name+":max_completion_tokens", func() string {
			return fmt.Sprintf("%s models (%s) refuse max_tokens: sending the cap as max_completion_tokens", f.Name, model)
		})
	}
	return nil
}

// applyRules renames body's model as the map or --override-model say,
// refuses a model of another provider, and applies its family's rules.
func (p *Parser) applyRules(body []byte, ep providers.Endpoint) ([]byte, error) {
	model := gjson.GetBytes(body, "model").String()
	if to := p.model(model); to != model {
		var err error
		if body, err = sjson.SetBytes(body, "model", to); err != nil {
			return nil, err
		}
		model = to
	}
	if p.Models.Rules == nil {
		return body, nil
	}
	if err := p.checkFamily(model, p.Models.Rules.Family(model)); err != nil {
		return nil, err
	}
	body, changes, err := p.Models.Rules.Apply(body, p.Format.String(), endpointKind(ep))
	if err != nil {
		return nil, err
	}
	p.Models.Notices.Note(changes)
	return body, nil
}

// endpointKind names ep as modelrules does.
func endpointKind(ep providers.Endpoint) string {
	switch ep {
	case providers.EndpointResponses:
		return modelrules.Responses
	case providers.EndpointEmbeddings:
		return modelrules.Embeddings
	}
	return modelrules.Chat
}

// hop applies the family check and rules to a fallback hop's body, in
// the hop's format to; nil rules pass it as it is.
func (mr *ModelRules) Hop(body []byte, to providers.Format, ep providers.Endpoint) ([]byte, error) {
	if mr == nil {
		return body, nil
	}
	p := Parser{Format: to, Models: *mr}
	p.Models.Override, p.Models.Map = false, nil // the hop's model is its own
	body, err := p.applyRules(body, ep)
	if err != nil {
		return nil, fmt.Errorf("fallback to %s: %w", cmpName(mr.ServesName, to.String()), err)
	}
	return body, nil
}
