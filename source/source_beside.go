package source

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// simpleBeside refuses a line in batch shape sh that also holds a simple
// line's request fields (prompt, system, model, max_tokens) with a value:
// a batch line's request is its sh.Key member and is sent as it is, so a
// top-level model beside it would be silently ignored while the user
// reads the line as asking for it. A null field asks for nothing and is
// let be (a table exported with columns for both kinds of line writes
// them). The line's own members (custom_id, method, url, key) and
// llmrun's (priority, tags) are not request fields; other members are
// ignored, as on any line.
func (f *lineFields) simpleBeside(sh providers.LineShape) error {
	fields := [...]struct {
		name string
		v    gjson.Result
	}{{"prompt", f.prompt}, {"system", f.system}, {"model", f.model}, {"max_tokens", f.maxTokens}}
	var names []string
	for _, fl := range fields {
		if providers.Present(fl.v) {
			names = append(names, fl.name)
		}
	}
	if names == nil {
		return nil
	}
	return fmt.Errorf("line holds %s (%s's batch shape) and %s (simple-line fields), which would not be sent: a batch line's request is all in its %s; write them there, or drop %s to make a simple line",
		sh.Key, sh.Format, strings.Join(names, ", "), sh.Key, sh.Key)
}
