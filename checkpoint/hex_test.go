package checkpoint

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseHex16IsParseUint: the hand-written parse of a line's
// fingerprint accepts and returns exactly what strconv.ParseUint(s, 16, 64)
// does for 16-character strings (random hex of either case, with one
// character replaced by a random byte now and then).
func TestParseHex16IsParseUint(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const digits = "0123456789abcdefABCDEF"
	cases := []string{"0000000000000000", "ffffffffffffffff", "FFFFFFFFFFFFFFFF", "+fffffffffffffff", "0x00000000000000", "000000000000000g", "00000000_0000000"}
	for range 20000 {
		b := make([]byte, 16)
		for i := range b {
			b[i] = digits[r.IntN(len(digits))]
		}
		if r.IntN(4) == 0 {
			b[r.IntN(16)] = byte(r.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := strconv.ParseUint(s, 16, 64)
		got, ok := parseHex16(s)
		gotB, okB := parseHex16([]byte(s))
		if ok != (err == nil) || okB != ok || (ok && (uint64(got) != want || gotB != got)) {
			t.Fatalf("parseHex16(%q) = %x %v, ParseUint: %x %v", s, got, ok, want, err)
		}
	}
}
