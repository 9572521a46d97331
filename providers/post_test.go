package providers

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A Ready config builds a URL's request target once (the parse, the
// query, the merged header) and sends every request with it: the server
// sees the wire's header, the JSON content type, the User-Agent, the
// extra headers and the query each time, and the wire's header map is
// left as it was.
func TestPostReadyTargetOnce(t *testing.T) {
	var seen []http.Header
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Clone())
		queries = append(queries, r.URL.RawQuery)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	cfg := Config{FirstByteTimeout: time.Minute, UserAgent: "llmrun/test", HTTPClient: NewHTTPClient(1),
		Header: http.Header{"x-extra": {"v1"}}, Query: url.Values{"k": {"v"}}}
	cfg.Ready()
	wire := http.Header{"Authorization": {"Bearer " + testKey}}
	for range 3 {
		resp, err := cfg.Post(t.Context(), srv.URL+"/v1/chat/completions", wire, []byte(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if m := cfg.targets.m.Load(); m == nil || len(*m) != 1 {
		t.Fatalf("targets: %v, want one", m)
	}
	for i, h := range seen {
		if h.Get("Authorization") != "Bearer "+testKey || h.Get("Content-Type") != "application/json" ||
			h.Get("User-Agent") != "llmrun/test" || h.Get("X-Extra") != "v1" || queries[i] != "k=v" {
			t.Errorf("request %d: headers %v, query %q", i, h, queries[i])
		}
	}
	if len(wire) != 1 {
		t.Errorf("the wire's header was modified: %v", wire)
	}
}

// A transport failure reads as http.Client.Do's did ("Post \"URL\": ..."),
// with the URL the request went to.
func TestPostErrorAsClientDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, ready := range []bool{false, true} {
		cfg := Config{HTTPClient: NewHTTPClient(1)}
		if ready {
			cfg.Ready()
		}
		_, err = cfg.Post(t.Context(), "http://"+addr+"/v1/x", nil, []byte(`{}`))
		pe := wantClass(t, err, ClassNetwork)
		if want := `Post "http://` + addr + `/v1/x": `; !strings.HasPrefix(pe.Message, want) {
			t.Errorf("ready %v: message %q, want it to start %q", ready, pe.Message, want)
		}
	}
}
