package providers_test

import (
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzStreams feeds every row's stream decoder arbitrary bytes: it never
// panics, and what it returns as an answer is valid JSON.
func FuzzStreams(f *testing.F) {
	for _, r := range rows {
		f.Add([]byte(r.bench(3)))
		for _, sc := range r.streams {
			f.Add([]byte(sc.stream))
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		for _, r := range rows {
			resp, err := r.replaying(string(stream)).Send(t.Context(), r.request("x", 64))
			if err == nil && !gjson.ValidBytes(resp.Body) {
				t.Fatalf("%s: an answer that is not JSON: %s", r.title(), resp.Body)
			}
		}
	})
}
