package h1

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// answer is a typical plain chat completion's head and body, as the
// mock server sends it.
const answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: req_123\r\n" +
	"X-Ratelimit-Limit-Requests: 10000\r\nX-Ratelimit-Remaining-Requests: 9999\r\nX-Ratelimit-Reset-Requests: 6ms\r\n" +
	"Date: Wed, 02 Dec 2026 02:00:00 GMT\r\nContent-Length: 64\r\n\r\n" +
	`{"id":"chatcmpl-1","choices":[{"message":{"content":"hi"}}]}    `

// BenchmarkRoundTrip: one POST and its answer on a pooled loopback
// connection, for allocations and CPU per request (compare with
// -bench=NetHTTP for net/http's Transport).
func BenchmarkRoundTrip(b *testing.B) {
	tr, _, _ := newTransport(&testing.T{})
	benchmarkRoundTrip(b, tr)
	tr.CloseIdleConnections()
}

func BenchmarkNetHTTP(b *testing.B) {
	tr := &http.Transport{}
	benchmarkRoundTrip(b, tr)
	tr.CloseIdleConnections()
}

func benchmarkRoundTrip(b *testing.B, tr http.RoundTripper) {
	url := rawServer(&testing.T{}, serveN(answer, nil))
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Tell me one fact about the number 7."}]}`
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Wall time on a shared machine is mostly waiting; the process's CPU
	// (client and the in-process server alike) is what this compares.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
