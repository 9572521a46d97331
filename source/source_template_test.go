package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// rendered runs Check and Each and returns id → prompt and id → vars.
func rendered(t *testing.T, src *Source) (prompts, vars map[string]string) {
	t.Helper()
	if _, err := src.Check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	prompts, vars = map[string]string{}, map[string]string{}
	err := src.Each(func(r *providers.Request) error {
		msgs := gjson.GetBytes(r.Body, "messages").Array()
		prompts[r.ID] = msgs[len(msgs)-1].Get("content").Str
		vars[r.ID] = string(r.Vars)
		return nil
	})
	if err != nil {
		t.Fatalf("each: %v", err)
	}
	return prompts, vars
}

func mustTemplate(t *testing.T, text string) *Template {
	t.Helper()
	tm, err := ParseTemplate("t", text)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestTemplateJSONL(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m", System: "sys"}, Template: mustTemplate(t, `Write about {{.topic}} in {{.words}} words{{if .tone}}, {{.tone}}{{end}}.`)}
	path := writeInput(t,
		`{"custom_id":"a","topic":"the sea","words":50,"tone":"calm"}`,
		`{"topic":"rain","words":2.50,"tone":""}`,
	)
	prompts, vars := rendered(t, &Source{Path: path, Parser: p})
	if got := prompts["a"]; got != "Write about the sea in 50 words, calm." {
		t.Errorf("a: %q", got)
	}
	if got := prompts["line-2"]; got != "Write about rain in 2.50 words." {
		t.Errorf("line-2: %q (numbers print as written)", got)
	}
	if vars["a"] != `{"custom_id":"a","topic":"the sea","words":50,"tone":"calm"}` {
		t.Errorf("vars %q", vars["a"])
	}
	t.Run("missing field names the line", func(t *testing.T) {
		path := writeInput(t, `{"topic":"x","words":1,"tone":""}`, `{"topic":"y","tone":""}`)
		_, err := (&Source{Path: path, Parser: p}).Check()
		var ie *InputError
		if !errors.As(err, &ie) || ie.Line != 2 || !strings.Contains(err.Error(), "words") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("empty prompt", func(t *testing.T) {
		q := p
		q.Template = mustTemplate(t, `{{.x}}`)
		path := writeInput(t, `{"x":"  "}`)
		if _, err := (&Source{Path: path, Parser: q}).Check(); err == nil || !strings.Contains(err.Error(), "empty prompt") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestTemplateCSV(t *testing.T) {
	p := Parser{Format: providers.FormatAnthropic, Defaults: LineDefaults{Model: "c"}, Template: mustTemplate(t, `{{.name}} asks: {{.question}}`)}
	write := func(t *testing.T, data string) string {
		path := filepath.Join(t.TempDir(), "in.csv")
		os.WriteFile(path, []byte(data), 0o644)
		return path
	}
	path := write(t, "\xEF\xBB\xBFcustom_id,name,question\r\n"+
		"q1,Ann,\"Why, and how?\"\r\n"+
		"q2,\"Bob \"\"B\"\"\",\"two\nlines\"\r\n"+
		"\r\n"+
		"q3,Cy,\"quote \\ and tab\t\"\r\n")
	prompts, vars := rendered(t, &Source{Path: path, Parser: p, Format: CSV})
	want := map[string]string{"q1": "Ann asks: Why, and how?", "q2": "Bob \"B\" asks: two\nlines", "q3": "Cy asks: quote \\ and tab\t"}
	for id, w := range want {
		if prompts[id] != w {
			t.Errorf("%s: %q, want %q", id, prompts[id], w)
		}
	}
	if len(prompts) != 3 {
		t.Errorf("%d requests, want 3", len(prompts))
	}
	if !gjson.Valid(vars["q2"]) || gjson.Get(vars["q2"], "name").Str != `Bob "B"` || gjson.Get(vars["q2"], "custom_id").Str != "q2" {
		t.Errorf("vars %s", vars["q2"])
	}
	t.Run("rows without custom_id are numbered by line", func(t *testing.T) {
		path := write(t, "name,question\nA,x\n\"B\",\"y\nz\"\nC,w\n")
		prompts, _ := rendered(t, &Source{Path: path, Parser: p, Format: CSV})
		if _, ok := prompts["line-5"]; !ok || len(prompts) != 3 {
			t.Errorf("ids %v, want line-2, line-3, line-5", prompts)
		}
	})
	for name, tc := range map[string]struct{ data, want string }{
		"short row":       {"name,question\nA,x\nB\n", ":3: CSV: wrong number of fields"},
		"bad quote":       {"name,question\nA,\"x\n", "CSV:"},
		"unnamed column":  {"name,,question\nA,x,y\n", ":1: CSV header: column 2 has no name"},
		"repeated column": {"name,name\nA,x\n", `column "name" appears twice`},
		"invalid UTF-8":   {"name,question\nA,x\nB,caf\xe9\n", ":3: invalid UTF-8"},
		"missing field":   {"name,q\nA,x\n", ":2: template"},
		"header only":     {"name,question\n", "no requests"},
		"duplicate ids":   {"custom_id,name,question\na,A,x\na,B,y\n", `:3: duplicate custom_id "a"`},
	} {
		t.Run(name, func(t *testing.T) {
			path := write(t, tc.data)
			_, err := (&Source{Path: path, Parser: p, Format: CSV}).Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseInputFormat(t *testing.T) {
	for _, tc := range []struct {
		v, path string
		want    InputFormat
	}{
		{"", "in.jsonl", JSONL}, {"", "in.csv", CSV}, {"", "IN.CSV.GZ", CSV}, {"", "x.csv.zst", CSV},
		{"csv", "in.jsonl", CSV}, {"jsonl", "in.csv", JSONL}, {"", "-", JSONL},
	} {
		if got, err := ParseInputFormat(tc.v, tc.path); err != nil || got != tc.want {
			t.Errorf("ParseInputFormat(%q, %q) = %v, %v", tc.v, tc.path, got, err)
		}
	}
	if _, err := ParseInputFormat("xml", "x"); err == nil {
		t.Error("xml accepted")
	}
}
