package job

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusShowsAnIntentAsBeingCreated: a batch whose create call a run
// did not see answered is recorded as an intent (no id yet); status lists
// it as being created, with its tag, not as a batch with an empty id.
func TestStatusShowsAnIntentAsBeingCreated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "in.out.jsonl")
	if err := os.WriteFile(out, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	state := map[string]any{"state": map[string]any{
		"batch:intent-7f3a": map[string]any{"id": "", "tag": "7f3a", "provider": "anthropic", "created": "2026-03-01T12:00:00Z", "ids": []string{"a", "b", "c"}},
		"batch:msgbatch_1":  map[string]any{"id": "msgbatch_1", "provider": "anthropic", "created": "2026-03-01T11:00:00Z", "ids": []string{"d"}},
	}}
	b, _ := json.Marshal(state)
	if err := os.WriteFile(out+".state.json", b, 0o600); err != nil {
		t.Fatal(err)
	}

	var text bytes.Buffer
	if err := Status(context.Background(), &text, StatusOptions{Path: out}); err != nil {
		t.Fatal(err)
	}
	want := "2 open provider batches: msgbatch_1 (anthropic, 1 requests, since 2026-03-01T11:00:00Z), " +
		"being created (intent 7f3a, anthropic, 3 requests, since 2026-03-01T12:00:00Z)"
	if !strings.Contains(text.String(), want) {
		t.Errorf("status:\n%s\nwant it to contain\n%s", text.String(), want)
	}
	if strings.Contains(text.String(), " (anthropic, 3 requests") {
		t.Errorf("the intent is listed as a batch with an empty id: %s", text.String())
	}

	var js bytes.Buffer
	if err := Status(context.Background(), &js, StatusOptions{Path: out, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var rep StatusReport
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	ob := rep.Outputs[0].OpenBatches
	if len(ob) != 2 || ob[0].ID != "msgbatch_1" || ob[0].Intent != "" || ob[1].ID != "" || ob[1].Intent != "7f3a" || ob[1].Requests != 3 {
		t.Errorf("open_batches %+v", ob)
	}
}
