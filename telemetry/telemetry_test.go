package telemetry

import (
	"context"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestOffWithoutEndpoint: no OTLP endpoint, or OTEL_SDK_DISABLED, builds
// nothing (a nil *Telemetry, so the run pays a nil check and no more).
func TestOffWithoutEndpoint(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"nothing":        {},
		"service only":   {"OTEL_SERVICE_NAME": "x"},
		"sdk disabled":   {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		"exporters none": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
		"logs endpoint":  {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://127.0.0.1:4318"},
	} {
		tel, err := New(context.Background(), Options{Getenv: env(e)})
		if err != nil || tel != nil {
			t.Errorf("%s: New = %v, %v; want nil, nil", name, tel, err)
		}
	}
}

// TestSignals: each signal is exported only when an endpoint covers it.
func TestSignals(t *testing.T) {
	tel, err := New(context.Background(), Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})})
	if err != nil || tel == nil || tel.tp == nil || tel.mp != nil {
		t.Fatalf("traces endpoint only: %+v, %v", tel, err)
	}
	tel.Finish(0, nil)
	tel, err = New(context.Background(), Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4318/v1/metrics"})})
	if err != nil || tel == nil || tel.tp != nil || tel.mp == nil || tel.tokens == nil {
		t.Fatalf("metrics endpoint only: %+v, %v", tel, err)
	}
	tel.Finish(0, nil)
}

func TestBadProtocol(t *testing.T) {
	_, err := New(context.Background(), Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})})
	if err == nil || !strings.Contains(err.Error(), "http/json") {
		t.Fatalf("err = %v, want the protocol named", err)
	}
}

func TestFinishReasons(t *testing.T) {
	for body, want := range map[string]string{
		`{"choices":[{"finish_reason":"stop"},{"finish_reason":"length"}]}`: "stop,length",
		`{"stop_reason":"end_turn"}`:                                        "end_turn",
		`{"candidates":[{"finishReason":"STOP"}]}`:                          "STOP",
		`{"status":"completed"}`:                                            "completed",
		`{"data":[]}`:                                                       "",
	} {
		var got []string
		eachFinishReason([]byte(body), func(s string) { got = append(got, s) })
		if got := strings.Join(got, ","); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
