package cmd

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// invalidFlag matches pflag's error for a value that does not parse:
// `invalid argument "abc" for "--rpm" flag: strconv.ParseFloat: …`.
var invalidFlag = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)
})

// plainFlagValueError says what a flag wants instead of the Go parser's
// words ("strconv.ParseFloat: parsing "abc": invalid syntax"): "--rpm abc:
// want a number". Other messages pass unchanged.
func plainFlagValueError(msg string) string {
	m := invalidFlag().FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	value, flag, why := m[1], m[2], m[3]
	want := ""
	switch {
	case strings.Contains(why, "ParseFloat"):
		want = "want a number"
	case strings.Contains(why, "ParseInt"), strings.Contains(why, "ParseUint"):
		want = "want a whole number"
		if strings.Contains(why, "out of range") {
			want = "the number is out of range"
		}
	case strings.Contains(why, "time: "):
		want = "want a duration such as 500ms, 30s, 5m or 2h"
	case strings.Contains(why, "ParseBool"):
		want = "want true or false"
	default:
		return msg
	}
	return fmt.Sprintf("%s %q: %s", flag, value, want)
}
