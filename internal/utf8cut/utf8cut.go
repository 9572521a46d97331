// Package utf8cut cuts text to a byte limit without splitting a
// character: the mock's answers and the OpenAI batch labels both need it.
package utf8cut

import "unicode/utf8"

// Prefix is the longest prefix of s of at most n bytes that ends on a
// UTF-8 boundary.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
