package source

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// Bounds of a line's tags: they label summaries, exports, metrics and
// spans, where a runaway tag would cost more than the request.
const (
	maxTags     = 16
	maxTagKey   = 64
	maxTagValue = 256
)

// lineTags reads a line's top-level tags object v into req: string keys
// to strings (numbers and booleans are taken as written). Like priority,
// it is llmrun's, not the provider's: never sent, not fingerprinted. A
// template's records are not read: their fields are the prompt's.
func lineTags(v gjson.Result, req *providers.Request) error {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return fmt.Errorf("tags must be a JSON object of strings, not %s", v.Raw)
	}
	var err error
	tags := make(map[string]string)
	v.ForEach(func(k, val gjson.Result) bool {
		switch {
		case k.Str == "" || len(k.Str) > maxTagKey:
			err = fmt.Errorf("tags: a key must have 1 to %d bytes, not %q", maxTagKey, k.Str)
		case val.Type == gjson.JSON || val.Type == gjson.Null:
			err = fmt.Errorf("tags: %q must be a string, number or boolean, not %s", k.Str, val.Raw)
		case len(val.String()) > maxTagValue:
			err = fmt.Errorf("tags: %q is longer than %d bytes", k.Str, maxTagValue)
		case len(tags) == maxTags:
			err = fmt.Errorf("tags: more than %d keys", maxTags)
		}
		if err != nil {
			return false
		}
		if _, dup := tags[k.Str]; !dup { // the first of repeated keys counts
			tags[k.Str] = val.String()
		}
		return true
	})
	if err != nil {
		return err
	}
	if len(tags) > 0 {
		req.Tags = tags
	}
	return nil
}
