package job

import (
	"strings"

	"github.com/llmrun/llmrun/modelrules"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/source"
)

// ModelOptions say which model each line is sent as.
type ModelOptions struct {
	// Override sends every line as --model, whatever model it names
	// (--override-model).
	Override bool
	// Map renames models (the config file's model_map).
	Map map[string]string
}

// check refuses --override-model without a model to override with.
func (m *ModelOptions) check(model string) error {
	if m.Override && model == "" {
		return usagef("--override-model needs --model (the model every line is sent as)")
	}
	return nil
}

// modelRules are the parser's model rules for requests to entry at
// baseURL: the model-family rules, said once each through io, the
// override and the map, and which provider's models the destination
// serves. Only a provider's own API (or the mock speaking its format)
// is known to serve its models alone; a gateway or a local server at
// another URL may serve any.
func (o *BatchOptions) modelRules(io *IO, entry registry.Entry, baseURL string) source.ModelRules {
	mr := source.ModelRules{
		Rules:    modelrules.Default(),
		Notices:  &modelrules.Notices{Say: func(msg string) { io.infof("%s", msg) }},
		Override: o.Models.Override,
		Map:      o.Models.Map,
	}
	own := entry.DefaultBaseURL != "" && strings.TrimRight(baseURL, "/") == strings.TrimRight(entry.DefaultBaseURL, "/")
	switch {
	case entry.Model != nil: // Azure: models are deployments, named by the user
	case entry.Mock || own && entry.Name == entry.Format.String():
		mr.Serves, mr.ServesName = entry.Format.String(), entry.Name
	}
	return mr
}
