package providers

import "testing"

func TestStripUserinfo(t *testing.T) {
	for raw, want := range map[string]string{
		"http://user:pass@127.0.0.1:8080/v1": "http://127.0.0.1:8080/v1",
		"https://token@api.example.com":      "https://api.example.com",
		"https://api.openai.com/v1":          "https://api.openai.com/v1",
		"http://us er:p%zz@host/x?y=1":       "http://host/x?y=***", // does not parse; query values masked
		"user:p@ss@host/v1":                  "host/v1",
		"":                                   "",
	} {
		if got := StripUserinfo(raw); got != want {
			t.Errorf("StripUserinfo(%q) = %q, want %q", raw, got, want)
		}
	}
}
