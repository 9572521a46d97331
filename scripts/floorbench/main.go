// Command floorbench is the least a Go client can do to get N chat
// completions from a server: a kept-alive connection per worker, one
// prebuilt request written, the response read to its end and thrown away
// (no JSON parsed, no output written). Its CPU, plain and streamed, is the
// floor under any client's on the same machine and server: what the kernel
// and Go's runtime cost to receive the bytes the server sends, as it
// segments them (scripts/sdkbench.sh runs it beside llmrun and the SDK).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the server's host:port (plain HTTP)")
	path := flag.String("path", "/v1/chat/completions", "the request's path")
	n := flag.Int("n", 2000, "requests to send")
	conc := flag.Int("concurrency", 64, "requests in flight, a connection each")
	stream := flag.Bool("stream", false, "ask for a streamed answer")
	model := flag.String("model", "gpt-4o-mini", "model to ask")
	flag.Parse()

	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Tell me one fact about the number 7."}]`, *model)
	if *stream {
		body += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	body += "}"
	req := []byte(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer sk-floorbench\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", *path, *addr, len(body), body))

	var next, bytesIn atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *conc)
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", *addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			br := bufio.NewReaderSize(c, 32<<10)
			for next.Add(1) <= int64(*n) {
				if _, err := c.Write(req); err != nil {
					errs <- err
					return
				}
				k, err := readResponse(br)
				if err != nil {
					errs <- err
					return
				}
				bytesIn.Add(k)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		fmt.Fprintln(os.Stderr, "floorbench:", err)
		os.Exit(1)
	}
	fmt.Printf("%d requests, %d body bytes\n", *n, bytesIn.Load())
}

// readResponse reads one response off br and returns its body's length in
// bytes. A chunked body is read to its last chunk by its framing; trailers
// are not expected.
func readResponse(br *bufio.Reader) (int64, error) {
	tp := textproto.NewReader(br)
	status, err := tp.ReadLine()
	if err != nil {
		return 0, err
	}
	if !strings.Contains(status, " 200 ") {
		return 0, fmt.Errorf("status %q", status)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return 0, err
	}
	if cl := h.Get("Content-Length"); cl != "" {
		k, err := strconv.ParseInt(cl, 10, 64)
		if err != nil {
			return 0, err
		}
		_, err = br.Discard(int(k))
		return k, err
	}
	var total int64
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return total, err
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil {
			return total, fmt.Errorf("chunk size %q: %v", line, err)
		}
		if size == 0 {
			_, err = br.Discard(2) // the blank line after the last chunk
			return total, err
		}
		if _, err := br.Discard(int(size) + 2); err != nil {
			return total, io.ErrUnexpectedEOF
		}
		total += size
	}
}
