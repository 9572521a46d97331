package cmd

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestEchoedCredentialsNeverWritten is issue 22 items 4 and 5: with a base
// URL carrying userinfo (sent as Basic auth) and a query key, and a
// --header token, every provider sends the query after its own path, and a
// server that echoes every header and the query back in its error leaves
// none of those values in any file the run writes or on stderr.
func TestEchoedCredentialsNeverWritten(t *testing.T) {
	const (
		qkey = "QUERYSECRET-4f1d9a"
		pass = "PASSSECRET-77aa"
		hdr  = "HDRSECRET-c0ffee"
		key  = "sk-APIKEYSECRET-123456"
	)
	var mu sync.Mutex
	paths := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		paths[r.URL.Path+"?"+r.URL.Query().Get("key")+r.URL.Query().Get("subscription-key")] = true
		mu.Unlock()
		echo, _ := json.Marshal(map[string]any{"headers": r.Header, "query": r.URL.RawQuery, "url": r.URL.String()})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal(string(echo))
		io.WriteString(w, `{"error":{"message":`+string(msg)+`,"type":"invalid_request_error","code":"echo"},"echo":`+string(echo)+`}`)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct{ provider, base, path, q string }{
		{"openai", "http://u:" + pass + "@" + host + "/v1?key=" + qkey, "/v1/chat/completions", qkey},
		{"groq", "http://u:" + pass + "@" + host + "/openai/v1?key=" + qkey, "/openai/v1/chat/completions", qkey},
		{"anthropic", "http://u:" + pass + "@" + host + "?key=" + qkey, "/v1/messages", qkey},
		{"gemini", "http://u:" + pass + "@" + host + "/v1beta?key=" + qkey, "/v1beta/models/m:generateContent", qkey},
		{"azure", "http://u:" + pass + "@" + host + "/openai/v1?subscription-key=" + qkey, "/openai/v1/chat/completions", qkey},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		os.WriteFile(in, []byte(`{"custom_id":"a","prompt":"hi","max_tokens":5}`+"\n"), 0o644)
		c := &cli{env: map[string]string{"OPENAI_API_KEY": key, "ANTHROPIC_API_KEY": key, "GEMINI_API_KEY": key, "GROQ_API_KEY": key, "AZURE_OPENAI_API_KEY": key}}
		code := c.run(t, "batch", in, "--provider", tc.provider, "--base-url", tc.base, "--model", "m", "--stream=false",
			"-H", "X-Gateway-Token: "+hdr, "--summary", filepath.Join(dir, "summary.json"), "--max-attempts", "1",
			"--log-format", "json", "--metrics-file", filepath.Join(dir, "metrics.prom"))
		if code == ExitOK || code == ExitUsage {
			t.Fatalf("%s: exit %d: %s", tc.provider, code, c.stderr.String())
		}
		mu.Lock()
		if !paths[tc.path+"?"+tc.q] {
			t.Errorf("%s: the server never saw %s with the query key; it saw %v", tc.provider, tc.path, paths)
		}
		mu.Unlock()
		written := c.stderr.String() + c.stdout.String()
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && p != in {
				b, _ := os.ReadFile(p)
				written += "\n" + p + ":\n" + string(b)
			}
			return nil
		})
		if !strings.Contains(written, "invalid_request_error") && !strings.Contains(written, "echo") {
			t.Fatalf("%s: the echoed error was not written anywhere: %s", tc.provider, written)
		}
		for _, s := range []string{qkey, pass, hdr, key, base64.StdEncoding.EncodeToString([]byte("u:" + pass))} {
			if strings.Contains(written, s) {
				i := strings.Index(written, s)
				t.Errorf("%s: %q written: …%s…", tc.provider, s, written[max(0, i-200):min(len(written), i+100)])
			}
		}
	}
}
