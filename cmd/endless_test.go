package cmd

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// endlessServer answers every dialect's endpoint with an answer that never
// ends: SSE deltas of 4 KiB forever when the request streams, else a JSON
// string that never closes. It records the most bytes it wrote to one
// request before the client hung up.
type endlessServer struct {
	mu  sync.Mutex
	max int64
}

func (s *endlessServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	stream := bytes.Contains(body, []byte(`"stream":true`)) || strings.Contains(r.URL.Path, "streamGenerate")
	text := strings.Repeat("a", 4096)
	var head, event string
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/messages"):
		head = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		event = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text + "\"}}\n\n"
		if !stream {
			head = `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`
		}
	case strings.Contains(p, "enerateContent"):
		event = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"" + text + "\"}]},\"index\":0}]}\r\n\r\n"
		if !stream {
			head = `{"candidates":[{"content":{"role":"model","parts":[{"text":"`
		}
	case strings.HasSuffix(p, "/responses"):
		head = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\n\n"
		event = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"i\",\"output_index\":0,\"content_index\":0,\"delta\":\"" + text + "\"}\n\n"
		if !stream {
			head = `{"id":"r","object":"response","status":"completed","model":"m","output":[{"type":"message","content":[{"type":"output_text","text":"`
		}
	default:
		event = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + text + "\"},\"finish_reason\":null}]}\n\n"
		if !stream {
			head = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		event = text
	}
	n, _ := io.WriteString(w, head)
	written := int64(n)
	for {
		n, err := io.WriteString(w, event)
		written += int64(n)
		if err != nil {
			break
		}
	}
	s.mu.Lock()
	s.max = max(s.max, written)
	s.mu.Unlock()
}

// kernelBuffers is the most a loopback connection can hold between the
// server's writes and the client's reads: the receiver's window, which
// Linux grows up to tcp_rmem's maximum while the reader keeps up (32 MiB
// on some machines: a client reading large blocks straight from the
// socket gets there), plus the sender's buffer (tcp_wmem's maximum); 8
// MiB where /proc does not say.
func kernelBuffers() int64 {
	total := int64(0)
	for _, f := range []string{"/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/ipv4/tcp_wmem"} {
		b, err := os.ReadFile(f)
		fields := strings.Fields(string(b))
		if err != nil || len(fields) != 3 {
			return 8 << 20
		}
		n, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return 8 << 20
		}
		total += n
	}
	return max(total, 8<<20)
}

// TestEndlessAnswerHitsTheCap is issue 22 item 1: a line whose max_tokens
// is 99999999999999 against a server that never stops answering fails
// that request with response_too_large at the capped bound (not one the
// line's max tokens lift), streamed or not, in every dialect, in a
// subprocess as a user runs it.
func TestEndlessAnswerHitsTheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	srv := &endlessServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const huge = `99999999999999`
	chat := `{"custom_id":"chat","body":{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":` + huge + `}}` + "\n"
	resp := `{"custom_id":"resp","method":"POST","url":"/v1/responses","body":{"model":"m","input":"hi","max_output_tokens":` + huge + `}}` + "\n"
	ant := `{"custom_id":"ant","params":{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":` + huge + `}}` + "\n"
	cases := []struct {
		provider, base, lines string
		want                  int
	}{
		{"openai", ts.URL + "/v1", chat + resp, 2},
		{"anthropic", ts.URL, ant, 1},
		{"gemini", ts.URL + "/v1beta", chat, 1},
	}
	capOf := map[bool]int64{
		true:  (&providers.Config{}).ResponseLimit(providers.MaxBoundTokens, true),
		false: (&providers.Config{}).ResponseLimit(providers.MaxBoundTokens, false),
	}
	past := regexp.MustCompile(`goes past (\d+) bytes`)
	for _, stream := range []bool{true, false} {
		for _, tc := range cases {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			os.WriteFile(in, []byte(tc.lines), 0o644)
			srv.mu.Lock()
			srv.max = 0
			srv.mu.Unlock()
			var stderr bytes.Buffer
			c := exec.Command(os.Args[0], "batch", in, "--provider", tc.provider, "--base-url", tc.base, "--model", "m",
				"--stream="+strconv.FormatBool(stream), "--quiet", "--max-attempts", "1")
			c.Env = append(os.Environ(), "LLMRUN_TEST_MAIN=1", "OPENAI_API_KEY=sk-endless-0000", "ANTHROPIC_API_KEY=sk-ant-endless-0000", "GEMINI_API_KEY=gk-endless-0000")
			c.Stderr = &stderr
			if code := exitCode(c.Run()); code != ExitFailed {
				t.Fatalf("%s stream=%v: exit %d, want %d: %s", tc.provider, stream, code, ExitFailed, stderr.String())
			}
			errs, _ := os.ReadFile(filepath.Join(dir, "in.errors.jsonl"))
			if got := strings.Count(string(errs), `"code":"response_too_large"`); got != tc.want {
				t.Fatalf("%s stream=%v: %d response_too_large, want %d: %.600s", tc.provider, stream, got, tc.want, errs)
			}
			for _, m := range past.FindAllStringSubmatch(string(errs), -1) {
				if n, _ := strconv.ParseInt(m[1], 10, 64); n > capOf[stream] {
					t.Errorf("%s stream=%v: bound %d bytes, over the cap %d", tc.provider, stream, n, capOf[stream])
				}
			}
			// The client stopped reading near the cap (what the connection
			// buffers between the two ends aside).
			srv.mu.Lock()
			wrote := srv.max
			srv.mu.Unlock()
			if wrote > capOf[stream]+kernelBuffers() {
				t.Errorf("%s stream=%v: the server wrote %d bytes to one request, cap %d", tc.provider, stream, wrote, capOf[stream])
			}
		}
	}
}
