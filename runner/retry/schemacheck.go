package retry

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// The schema library checks a schema's shapes (a "required" that is not
// a list fails to load) but not its meaning against the draft's
// meta-schema, so a misspelt type ("strin") would reject every answer and
// spend the run on retries. checkKeywords catches what the Go types let
// through, before anything is sent.

// jsonTypes are the names a "type" keyword may use.
var jsonTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// counts are the keywords that must be non-negative integers.
var counts = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}

// Keywords whose value is a subschema, an object of subschemas or an array
// of them (draft 2020-12 and draft-07).
var (
	oneSchema = []string{"additionalProperties", "items", "additionalItems", "contains", "propertyNames", "not",
		"if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}
	schemaMaps   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaArrays = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

// checkKeywords checks the schema s (raw JSON) and its subschemas at path
// (a JSON pointer, "" for the root).
func checkKeywords(s gjson.Result, path string) error {
	if !s.IsObject() {
		return nil // true, false: valid schemas; other shapes fail to load
	}
	if t := s.Get("type"); t.Exists() {
		names := []gjson.Result{t}
		if t.IsArray() {
			names = t.Array()
		}
		for _, n := range names {
			if n.Type != gjson.String || !jsonTypes[n.Str] {
				return fmt.Errorf("%s/type: %s is not a JSON type (null, boolean, object, array, number, string, integer)", path, n.Raw)
			}
		}
	}
	for _, k := range counts {
		if v := s.Get(gjson.Escape(k)); v.Exists() && (v.Type != gjson.Number || v.Num < 0 || v.Num != float64(int64(v.Num))) {
			return fmt.Errorf("%s/%s: %s is not a count (an integer of 0 or more)", path, k, v.Raw)
		}
	}
	return checkSubschemas(s, path)
}

// checkSubschemas runs checkKeywords on the subschemas of s.
func checkSubschemas(s gjson.Result, path string) error {
	var err error
	sub := func(v gjson.Result, p string) bool {
		err = checkKeywords(v, p)
		return err == nil
	}
	for _, k := range oneSchema {
		if v := s.Get(gjson.Escape(k)); v.IsObject() && !sub(v, path+"/"+k) {
			return err
		}
	}
	for _, k := range schemaMaps {
		s.Get(gjson.Escape(k)).ForEach(func(name, v gjson.Result) bool {
			return sub(v, path+"/"+k+"/"+pointerToken(name.String()))
		})
		if err != nil {
			return err
		}
	}
	for _, k := range schemaArrays {
		if v := s.Get(gjson.Escape(k)); v.IsArray() {
			for i, e := range v.Array() {
				if !sub(e, fmt.Sprintf("%s/%s/%d", path, k, i)) {
					return err
				}
			}
		}
	}
	return nil
}

// pointerToken escapes a JSON pointer token (RFC 6901).
func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
