package mock

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFIFOEvictsOldestFirst(t *testing.T) {
	f := newFIFO[int](3)
	for k := range uint64(5) {
		f.put(k, int(k))
	}
	f.put(3, 30) // an update is not an insertion: nothing evicted
	for k, want := range map[uint64]bool{0: false, 1: false, 2: true, 3: true, 4: true} {
		if _, ok := f.get(k); ok != want {
			t.Errorf("key %d present %v, want %v", k, ok, want)
		}
	}
	if v, _ := f.get(3); v != 30 || len(f.m) != 3 || len(f.ring) != 3 {
		t.Errorf("v %d, %d entries, ring %d", v, len(f.m), len(f.ring))
	}
}

// TestServerMemoryBounded answers thousands of distinct requests (long
// prompts too, each adding cacheable prefixes) and checks that what the
// server remembers stays within its bounds (issue 11: the mock must not
// grow with the requests it has answered).
func TestServerMemoryBounded(t *testing.T) {
	s := New(Config{RememberBodies: 100, CachePrefixes: 50})
	long := strings.Repeat("y", 6000)
	for i := range 3000 {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"q%d"}]}`, i)
		if i%10 == 0 {
			body = fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":"%d %s"},{"role":"user","content":"q%d"}]}`, i, long, i)
		}
		path := "/v1/chat/completions"
		if i%2 == 1 {
			path = "/v1/nowhere" // 404s are remembered too (for request ids)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if want := map[bool]int{false: 200, true: 404}[i%2 == 1]; w.Code != want {
			t.Fatalf("request %d: %d %s", i, w.Code, w.Body)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies.m) != 100 || len(s.bodies.ring) != 100 || len(s.prefixes.m) != 50 || len(s.prefixes.ring) != 50 {
		t.Fatalf("remembered %d bodies (ring %d), %d prefixes (ring %d)", len(s.bodies.m), len(s.bodies.ring), len(s.prefixes.m), len(s.prefixes.ring))
	}
	if s.stats.Completed != 1500 || s.stats.NotFound != 1500 {
		t.Fatalf("stats %+v", s.stats)
	}
}
