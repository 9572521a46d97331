package metrics

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("does not parse: %v", err)
	}
	return mfs
}

// TestTextfileAtomic: a reader never sees a half-written textfile while
// the exporter rewrites it every millisecond (a file of 200 histograms,
// large enough that a write in place would be seen half done).
func TestTextfileAtomic(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "llmrun.prom")
	e := New(Options{File: file, Interval: time.Millisecond, Version: "v1"})
	for i := range 200 {
		e.AdmissionWait(fmt.Sprintf("openai|https://api.example.com/v1|model-%03d", i), time.Duration(i)*time.Millisecond)
	}
	if err := e.write(); err != nil {
		t.Fatal(err)
	}
	var want int
	if b, err := os.ReadFile(file); err != nil {
		t.Fatal(err)
	} else {
		want = len(b)
		if want < 50_000 {
			t.Fatalf("textfile of %d bytes: too small to show a torn write", want)
		}
	}
	e.Start(nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 60 {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			if len(b) != want {
				t.Errorf("read %d bytes, want %d: a torn write", len(b), want)
				return
			}
			parse(t, string(b))
		}
	}()
	wg.Wait()
	if err := e.Finish(3); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	mfs := parse(t, string(b))
	if g := mfs["llmrun_run_exit_code"]; g == nil || g.Metric[0].GetGauge().GetValue() != 3 {
		t.Errorf("exit code: %v", g)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files left in the directory, want the textfile alone", len(ents))
	}
}

// TestPushgateway: the metrics are pushed under job llmrun and the
// output's grouping label, periodically and at the end.
func TestPushgateway(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var last []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.ResponseFormat(r.Header))
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			t.Errorf("push body does not decode: %v", err)
		}
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		last = b
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	e := New(Options{Pushgateway: srv.URL, Interval: 10 * time.Millisecond, Grouping: map[string]string{"output": "nightly.out.jsonl"}})
	e.Start(nil)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(paths)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no periodic push")
		}
	}
	if err := e.Finish(0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) < 2 {
		t.Fatalf("%d pushes, want periodic ones and a last one", len(paths))
	}
	if paths[0] != "PUT /metrics/job/llmrun/output/nightly.out.jsonl" {
		t.Errorf("pushed to %q", paths[0])
	}
	if !bytes.Contains(last, []byte("llmrun_run_exit_code")) {
		t.Error("the last push lacks the exit code")
	}
}

func TestRedactKey(t *testing.T) {
	if got := redactKey("openai|https://user:secret@h/v1|m"); strings.Contains(got, "secret") || !strings.Contains(got, "user:xxxxx@h") {
		t.Errorf("redactKey: %q", got)
	}
	if got := redactKey("my-pool"); got != "my-pool" {
		t.Errorf("redactKey(pool) = %q", got)
	}
}
