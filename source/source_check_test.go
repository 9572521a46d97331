package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// TestCheckParallelMatchesSequential: the check pass gives the same result,
// or the same first error (line and message), whether it parses in line
// or on several goroutines, for inputs of many batches with a bad line, a
// line Validate refuses or a duplicate id at various places.
func TestCheckParallelMatchesSequential(t *testing.T) {
	const n = 3*checkBatchLines + 17
	dir := t.TempDir()
	write := func(name string, edit func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if l := edit(i); l != "" {
				b.WriteString(l + "\n")
				continue
			}
			fmt.Fprintf(&b, `{"custom_id":"r%d","prompt":"p%d"}`+"\n", i, i)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	at := func(line int, text string) func(int) string {
		return func(i int) string {
			if i == line-1 {
				return text
			}
			return ""
		}
	}
	inputs := map[string]string{
		"clean":               write("clean", func(int) string { return "" }),
		"bad JSON, batch 1":   write("bad1", at(3, `{"prompt":`)),
		"bad JSON, batch 3":   write("bad3", at(2*checkBatchLines+5, `{"custom_id":"x"}`)),
		"last line bad":       write("badlast", at(n, `[1]`)),
		"refused by Validate": write("refused", at(checkBatchLines+1, `{"custom_id":"big","prompt":"p","max_tokens":999}`)),
		"two errors":          write("two", func(i int) string { return map[int]string{700: `{"prompt":""}`, 1200: `nope`}[i] }),
		"duplicate":           write("dup", at(1500, `{"custom_id":"r3","prompt":"again"}`)),
		"blank lines":         write("blank", func(i int) string { return map[bool]string{true: " "}[i%100 == 0] }),
	}
	validate := func(req *providers.Request) error {
		if req.MaxTokens > 500 {
			return errors.New("too big")
		}
		return nil
	}
	for name, path := range inputs {
		t.Run(name, func(t *testing.T) {
			var results []string
			for _, workers := range []int{1, 2, 3} {
				src := &Source{Path: path, Parser: Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}},
					Validate: validate, Shard: Shard{I: 1, N: 2}, checkWorkers: workers}
				src.Route = &Route{Provider: &slowProvider{}}
				res, err := src.Check()
				set, _ := src.InputSet(NewFingerprinter(*src.Route))
				results = append(results, fmt.Sprintf("%+v %v %+v", res, err, set))
				src.Close()
			}
			if results[0] != results[1] || results[0] != results[2] {
				t.Fatalf("in line / 2 / 3 workers:\n%s\n%s\n%s", results[0], results[1], results[2])
			}
			if name == "clean" && !strings.Contains(results[0], "<nil>") {
				t.Fatalf("clean input: %s", results[0])
			}
			if name != "clean" && name != "blank lines" && strings.Contains(results[0], " <nil> ") {
				t.Fatalf("%s: no error: %s", name, results[0])
			}
			t.Log(results[0])
		})
	}
}
