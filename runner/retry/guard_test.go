package retry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const personSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["name", "age"],
  "properties": {
    "name": {"type": "string", "minLength": 1},
    "age": {"type": "integer", "minimum": 0},
    "address": {"$ref": "address.json"}
  },
  "additionalProperties": false
}`

const addressSchema = `{"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}`

func writeSchemas(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"person.json": personSchema, "address.json": addressSchema, "broken.json": `{"type": 12}`, "notjson.json": `{`,
		"draft4.json":  `{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}`,
		"remote.json":  `{"properties": {"a": {"$ref": "https://example.com/a.json"}}}`,
		"missref.json": `{"properties": {"a": {"$ref": "nope.json"}}}`,
		"typo.json":    `{"properties": {"a": {"type": "strin"}}}`,
		"types.json":   `{"$defs": {"x": {"type": ["string", "nul"]}}}`,
		"nested.json":  `{"items": {"anyOf": [{"type": "object"}, {"properties": {"n": {"minLength": -1}}}]}}`,
		"count.json":   `{"maxItems": -2}`,
		"reftypo.json": `{"properties": {"a": {"$ref": "typo.json"}}}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGuard(t *testing.T) {
	dir := writeSchemas(t)
	schema, err := LoadSchema(filepath.Join(dir, "person.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		g      Guard
		text   string
		reject string // substring of the error; "" accepts
	}{
		"zero guard accepts anything":  {Guard{}, "", ""},
		"zero guard accepts non-JSON":  {Guard{}, "hello", ""},
		"min chars met":                {Guard{MinChars: 5}, "hello", ""},
		"min chars short":              {Guard{MinChars: 6}, "hello", "5 characters, want at least 6"},
		"min chars counts runes":       {Guard{MinChars: 3}, "日本語", ""},
		"min chars runes short":        {Guard{MinChars: 4}, "日本語", "3 characters"},
		"min chars ignores padding":    {Guard{MinChars: 3}, "  \n ab \t\n", "2 characters"},
		"json object":                  {Guard{RequireJSON: true}, `{"a": 1}`, ""},
		"json scalar":                  {Guard{RequireJSON: true}, `42`, ""},
		"json with white space":        {Guard{RequireJSON: true}, "\n  [1, 2]\n", ""},
		"json empty":                   {Guard{RequireJSON: true}, "", "not JSON"},
		"json prose":                   {Guard{RequireJSON: true}, "Sure! Here it is.", "not JSON"},
		"json truncated":               {Guard{RequireJSON: true}, `{"a": [1, 2`, "not JSON"},
		"json trailing prose":          {Guard{RequireJSON: true}, `{"a": 1} hope this helps`, "not JSON"},
		"json two values":              {Guard{RequireJSON: true}, `{} {}`, "not JSON"},
		"json fenced":                  {Guard{RequireJSON: true}, "```json\n{\"a\": 1}\n```", ""},
		"json fenced, no info":         {Guard{RequireJSON: true}, "\n```\n[1]\n```\n", ""},
		"json fenced, JSON upper":      {Guard{RequireJSON: true}, "```JSON\n{}\n```", ""},
		"json fenced, bad inside":      {Guard{RequireJSON: true}, "```json\n{oops}\n```", "not JSON"},
		"json fence with prose before": {Guard{RequireJSON: true}, "Here:\n```json\n{}\n```", "not JSON"},
		"json two fences":              {Guard{RequireJSON: true}, "```json\n{}\n```\n```json\n{}\n```", "not JSON"},
		"json fence on one line":       {Guard{RequireJSON: true}, "```{}```", "not JSON"},
		"json unclosed fence":          {Guard{RequireJSON: true}, "```json\n{}\n", "not JSON"},
		"schema valid":                 {Guard{Schema: schema}, `{"name": "Ada", "age": 36}`, ""},
		"schema valid with $ref":       {Guard{Schema: schema}, `{"name": "Ada", "age": 36, "address": {"city": "London"}}`, ""},
		"schema valid, fenced":         {Guard{Schema: schema}, "```json\n{\"name\": \"Ada\", \"age\": 36}\n```", ""},
		"schema missing field":         {Guard{Schema: schema}, `{"name": "Ada"}`, "does not match the JSON schema"},
		"schema wrong type":            {Guard{Schema: schema}, `{"name": "Ada", "age": "36"}`, `does not match the JSON schema: validating /properties/age: type: 36 has type "string", want "integer"`},
		"schema errors on one line":    {Guard{Schema: schema}, `{"name": "", "age": "x", "address": {}}`, "does not match the JSON schema: validating /properties/"},
		"schema big integer":           {Guard{Schema: schema}, `{"name": "Ada", "age": 123456789012345678901234567890}`, ""},
		"schema float not integer":     {Guard{Schema: schema}, `{"name": "Ada", "age": 36.5}`, "does not match"},
		"schema $ref violated":         {Guard{Schema: schema}, `{"name": "Ada", "age": 1, "address": {}}`, "does not match"},
		"schema extra field":           {Guard{Schema: schema}, `{"name": "Ada", "age": 1, "x": 0}`, "does not match"},
		"schema not JSON":              {Guard{Schema: schema}, `name: Ada`, "not JSON"},
		"all checks, min chars first":  {Guard{RequireJSON: true, Schema: schema, MinChars: 100}, `{"name": "Ada", "age": 36}`, "characters"},
		"all checks pass":              {Guard{RequireJSON: true, Schema: schema, MinChars: 10}, `{"name": "Ada", "age": 36}`, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := tt.g.Check(tt.text)
			switch {
			case tt.reject == "" && err != nil:
				t.Errorf("Check(%q) = %v, want accepted", tt.text, err)
			case tt.reject != "" && err == nil:
				t.Errorf("Check(%q) accepted, want rejected (%s)", tt.text, tt.reject)
			case err != nil && !errors.Is(err, ErrRejected):
				t.Errorf("error %v does not wrap ErrRejected", err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error %q spans lines", err)
			case err != nil && !strings.Contains(err.Error(), tt.reject):
				t.Errorf("error %q does not say %q", err, tt.reject)
			}
		})
	}
}

func TestLoadSchemaErrors(t *testing.T) {
	dir := writeSchemas(t)
	for _, name := range []string{"missing.json", "broken.json", "notjson.json", "draft4.json", "remote.json", "missref.json",
		"typo.json", "types.json", "nested.json", "count.json", "reftypo.json"} {
		if _, err := LoadSchema(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("LoadSchema(%s) = %v, want an error naming the file", name, err)
		}
	}
}

// TestLoadSchemaNamesTheKeyword: a schema whose keywords the library's
// types let through but no answer could meet fails to load, naming where.
func TestLoadSchemaNamesTheKeyword(t *testing.T) {
	dir := writeSchemas(t)
	for name, want := range map[string]string{
		"typo.json":   `/properties/a/type: "strin" is not a JSON type`,
		"types.json":  `/$defs/x/type: "nul" is not a JSON type`,
		"nested.json": `/items/anyOf/1/properties/n/minLength: -1 is not a count`,
		"count.json":  `/maxItems: -2 is not a count`,
	} {
		if _, err := LoadSchema(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadSchema(%s) = %v, want %q", name, err, want)
		}
	}
	if _, err := LoadSchema(filepath.Join(dir, "person.json")); err != nil {
		t.Errorf("person.json: %v", err)
	}
}

// TestLoadSchemaNamesTheFileOnce: an error in the schema file given, or in
// one its $ref loads, names each file once (the reader and its caller both
// named it).
func TestLoadSchemaNamesTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad-type.json", `{"type":"strin"}`)
	ref := write("uses-ref.json", `{"$ref":"bad-type.json"}`)
	trunc := write("cut-short.json", `{"type": `)
	for _, p := range []string{bad, ref, trunc} {
		_, err := LoadSchema(p)
		if err == nil {
			t.Fatalf("%s: no error", p)
		}
		for _, name := range []string{filepath.Base(p), "bad-type.json"} {
			if n := strings.Count(err.Error(), name); n > 1 {
				t.Errorf("%s: %q names %s %d times", filepath.Base(p), err, name, n)
			}
		}
		if !strings.Contains(err.Error(), filepath.Base(p)) {
			t.Errorf("%q does not name %s", err, filepath.Base(p))
		}
	}
}
