package cmd

import (
	"strings"
	"testing"
)

// TestFlagValueErrorsArePlain: a flag value that does not parse is named
// with what the flag wants, not the Go parser's words, and exits 2.
func TestFlagValueErrorsArePlain(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--rpm", "abc"}, []string{`--rpm "abc": want a number`}},
		{[]string{"--concurrency", "x"}, []string{`--concurrency "x": want a whole number`}},
		{[]string{"--grace", "soon"}, []string{`--grace "soon": want a duration`}},
	} {
		c := &cli{}
		code := c.run(t, append([]string{"batch", "in.jsonl"}, tc.args...)...)
		got := c.stderr.String()
		if code != ExitUsage || strings.Contains(got, "strconv") || strings.Contains(got, "time: invalid") {
			t.Errorf("%v: exit %d, %q", tc.args, code, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q lacks %q", tc.args, got, w)
			}
		}
	}
}
