package ending

import (
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

func TestMaxFailuresExceeded(t *testing.T) {
	for _, tc := range []struct {
		m                MaxFailures
		failed, answered int64
		want             bool
	}{
		{MaxFailures{}, 100, 100, false},
		{MaxFailures{On: true, Count: 0}, 1, 1, true},
		{MaxFailures{On: true, Count: 5}, 5, 10, false},
		{MaxFailures{On: true, Count: 5}, 6, 10, true},
		{MaxFailures{On: true, Ratio: 0.1}, 5, 10, false}, // too few answered to judge
		{MaxFailures{On: true, Ratio: 0.1}, 2, 20, false},
		{MaxFailures{On: true, Ratio: 0.1}, 3, 20, true},
	} {
		if got := tc.m.Exceeded(tc.failed, tc.answered); got != tc.want {
			t.Errorf("%+v with %d of %d failed: %v, want %v", tc.m, tc.failed, tc.answered, got, tc.want)
		}
	}
}

// TestSetupErrorHints: a streamed run's setup failure suggests
// --stream=false; a failure's own hint wins.
func TestSetupErrorHints(t *testing.T) {
	e := &SetupError{Where: "openai at http://x/v1", Attempts: 5, Since: 30 * time.Second, Streamed: true,
		Err: &providers.Error{Status: 500, Body: []byte(`{"status":"failure"}`)}}
	if s := e.Error(); !strings.Contains(s, "--stream=false") || !strings.Contains(s, "HTTP 500") || !strings.Contains(s, `{"status":"failure"}`) {
		t.Errorf("streamed: %s", s)
	}
	e.Probe = ProbeOK
	if s := e.Error(); !strings.Contains(s, "sent plain (not streamed) succeeded") {
		t.Errorf("probe succeeded: %s", s)
	}
	e.Probe = "HTTP 500"
	if s := e.Error(); strings.Contains(s, "--stream=false") || !strings.Contains(s, "plain failed too") {
		t.Errorf("probe failed: %s", s)
	}
	e.Err.Hint = "check the base URL"
	if s := e.Error(); strings.Contains(s, "--stream=false") || !strings.Contains(s, "check the base URL") {
		t.Errorf("with a hint: %s", s)
	}
}
