// Command otlpsink is an OTLP/HTTP receiver for tracing benchmarks: it
// answers every export, counts the spans and metric points it decoded,
// and keeps nothing. GET /stats prints "exports spans bytes". It runs as
// its own process so that its CPU is not counted in llmrun's.
//
//	go run ./scripts/otlpsink 127.0.0.1:4318
package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: otlpsink HOST:PORT")
	}
	var exports, spans, size atomic.Int64
	http.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		exports.Add(1)
		size.Add(int64(len(b)))
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans.Add(int64(len(ss.Spans)))
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	http.HandleFunc("/v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	})
	http.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d %d %d\n", exports.Load(), spans.Load(), size.Load())
	})
	log.Fatal(http.ListenAndServe(os.Args[1], nil))
}
