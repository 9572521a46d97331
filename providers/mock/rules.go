package mock

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/modelrules"
)

// The model-family rules the real APIs enforce, from the same data
// llmrun's check applies (modelrules): a body a family refuses is
// answered 400 as the provider answers it, so a test proves llmrun never
// sends one. Config.NoModelRules turns them off; Config.KnownModels adds
// the 404 of a model the provider does not serve.

// ruleFormat is the wire format d's chat bodies are in, for the rules
// ("" for endpoints the rules do not cover: embeddings, Responses).
func ruleFormat(d dialect) string {
	switch d := d.(type) {
	case noUsage:
		return ruleFormat(d.dialect)
	case openAI, azure:
		return "openai"
	case anthropic:
		return "anthropic"
	case gemini:
		if d.embed == 0 {
			return "gemini"
		}
	}
	return ""
}

// modelRuleError is the answer to a body its model's family refuses, or
// nil. model is the request's (Gemini's from its path).
func (s *Server) modelRuleError(d dialect, body []byte, model string) *apiError {
	format := ruleFormat(d)
	if format == "" {
		return nil
	}
	f := s.rules.Family(model)
	if s.cfg.KnownModels && model != defaultModel && (f == nil || f.Provider != format) {
		return errModelNotFound(format, model)
	}
	if s.cfg.NoModelRules || f == nil {
		return nil
	}
	root := gjson.ParseBytes(body)
	if format == "openai" {
		return openAIRuleError(f, root)
	}
	if format == "anthropic" {
		return anthropicRuleError(f, root)
	}
	return nil
}

// openAIRuleError applies a family's rules as OpenAI's Chat Completions
// does, with its messages.
func openAIRuleError(f *modelrules.Family, root gjson.Result) *apiError {
	if f.TokenField == "max_completion_tokens" && present(root.Get("max_tokens")) {
		return errInvalid("max_tokens", "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
	}
	unless := f.FixedUnless != nil && root.Get(f.FixedUnless.Field).Raw == string(f.FixedUnless.Value)
	for k, want := range f.Fixed {
		v := root.Get(k)
		if present(v) && !unless && !sameJSON(v, string(want)) {
			return errInvalid(k, fmt.Sprintf("Unsupported value: '%s' does not support %s with this model. Only the default (%s) value is supported.", k, v.Raw, want))
		}
	}
	if f.JSONNeedsWord && root.Get("response_format.type").Str == "json_object" && !modelrules.MessagesMention(root.Get("messages"), "json") {
		return errInvalid("messages", "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.")
	}
	return nil
}

// anthropicRuleError applies a family's rules as the Messages API does.
func anthropicRuleError(f *modelrules.Family, root gjson.Result) *apiError {
	for _, g := range f.Exclusive {
		n := 0
		for _, k := range g {
			if present(root.Get(k)) {
				n++
			}
		}
		if n > 1 {
			return errInvalid("", "`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
		}
	}
	for k, max := range f.Max {
		if v := root.Get(k); v.Type == gjson.Number && v.Num > max {
			return errInvalid(k, fmt.Sprintf("%s: Input should be less than or equal to %g", k, max))
		}
	}
	return nil
}

func present(v gjson.Result) bool { return v.Exists() && v.Type != gjson.Null }

func sameJSON(v gjson.Result, want string) bool {
	w := gjson.Parse(want)
	if v.Type == gjson.Number && w.Type == gjson.Number {
		return v.Num == w.Num
	}
	return v.Raw == w.Raw
}

// errModelNotFound is each provider's 404 for a model it does not serve.
func errModelNotFound(format, model string) *apiError {
	e := &apiError{status: 404, oaType: "invalid_request_error", oaCode: "model_not_found", oaParam: "model", anType: "not_found_error",
		message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), anMessage: "model: " + model}
	if format == "gemini" {
		e.message = fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent.", model)
	}
	return e
}

// parseRuled parses a batch item's body as d does and applies the model
// rules, as the synchronous endpoint would.
func (s *Server) parseRuled(d dialect, body []byte) (*request, *apiError) {
	req, aerr := d.parse(body)
	if aerr != nil {
		return nil, aerr
	}
	model := req.model
	if model == "" {
		model = defaultModel
	}
	if aerr := s.modelRuleError(d, body, model); aerr != nil {
		return nil, aerr
	}
	return req, nil
}
