package providers

import "testing"

func TestLocalURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://127.0.0.1:8000/v1":      true,
		"http://127.1.2.3/v1":           true,
		"http://localhost:11434/v1":     true,
		"http://LOCALHOST./v1":          true,
		"http://vllm.localhost/v1":      true,
		"http://[::1]:8080/v1":          true,
		"http://10.0.0.5:8000/v1":       true,
		"http://172.16.3.4/v1":          true,
		"http://192.168.1.20:8080/v1":   true,
		"http://[fd00::1]/v1":           true,
		"http://169.254.1.1/v1":         true,
		"http://[::ffff:10.1.1.1]/v1":   true,
		"http://0.0.0.0:8000/v1":        true,
		"https://api.openai.com/v1":     false,
		"http://8.8.8.8/v1":             false,
		"http://172.32.0.1/v1":          false,
		"http://my-gpu-box:8000/v1":     false, // names are not resolved
		"http://localhost.example.com/": false,
		"not a url":                     false,
		"":                              false,
	} {
		if got := LocalURL(raw); got != want {
			t.Errorf("LocalURL(%q) = %v, want %v", raw, got, want)
		}
	}
}
