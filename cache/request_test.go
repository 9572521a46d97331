package cache

import (
	"testing"

	"github.com/llmrun/llmrun/providers"
)

func TestSampled(t *testing.T) {
	for body, want := range map[string]bool{
		`{"temperature":0}`:                      false,
		`{"temperature":0,"n":1}`:                false,
		`{"temperature":0,"n":3}`:                true,
		`{"temperature":0.7}`:                    true,
		`{}`:                                     true, // the providers' default is 1
		`{"generationConfig":{"temperature":0}}`: false,
		`{"generationConfig":{"temperature":0,"candidateCount":2}}`: true,
	} {
		if got := Samples([]byte(body)); got != want {
			t.Errorf("Samples(%s) = %v, want %v", body, got, want)
		}
	}
}

// TestCacheKeyIgnoresIdAndPriority: two requests that ask the same
// thing share a key whatever their ids and priorities; another model or
// endpoint does not.
func TestCacheKeyIgnoresIdAndPriority(t *testing.T) {
	body := []byte(`{"model":"m1","messages":[{"role":"user","content":"hi"}]}`)
	a := &providers.Request{ID: "a", Body: body, Model: "m1", Priority: 1}
	b := &providers.Request{ID: "b", Body: body, Model: "m1", Priority: 9}
	if RequestKey(a) != RequestKey(b) {
		t.Fatal("id or priority changed the key")
	}
	reencoded := &providers.Request{ID: "c", Body: []byte(`{ "messages": [ {"content": "h\u0069", "role": "user"} ], "model": "m1" }`), Model: "m1"}
	if RequestKey(reencoded) != RequestKey(a) {
		t.Fatal("re-encoding the body (spacing, key order, escapes) changed the key")
	}
	edited := &providers.Request{ID: "d", Body: []byte(`{"model":"m1","messages":[{"role":"user","content":"ho"}]}`), Model: "m1"}
	if RequestKey(edited) == RequestKey(a) {
		t.Fatal("an edited prompt shares the key")
	}
	for _, o := range []*providers.Request{
		{ID: "a", Body: body, Model: "m2"},
		{ID: "a", Body: body, Model: "m1", Endpoint: providers.EndpointResponses},
	} {
		if RequestKey(o) == RequestKey(a) {
			t.Fatalf("model %s endpoint %s shares the key", o.Model, o.Endpoint.Path())
		}
	}
}
