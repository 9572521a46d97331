package mock_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// sseEventsOf splits a stream into (event name, data) pairs.
func sseEventsOf(t *testing.T, body string) (names, data []string) {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", body[max(0, len(body)-80):])
	}
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		name, rest, ok := strings.Cut(ev, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(rest, "data: ") || strings.Contains(rest, "\n") {
			t.Fatalf("event %q is not event: + one data: line", ev)
		}
		names, data = append(names, strings.TrimPrefix(name, "event: ")), append(data, strings.TrimPrefix(rest, "data: "))
	}
	return names, data
}

// TestResponsesStream: the mock's Responses stream is the §7.3 sequence,
// event names matching types, sequence numbers from 0 without gaps, no
// [DONE], deltas adding up to the text, and a terminal response equal to
// the plain answer; max_output_tokens cuts it to response.incomplete.
func TestResponsesStream(t *testing.T) {
	srv, _ := start(t, mock.Config{})
	for name, tc := range map[string]struct {
		body, terminal string
		maxTokens      int
	}{
		"string input":            {`{"model":"gpt-m","instructions":"Be brief.","input":"Name a prime number."`, "response.completed", 0},
		"items, cut at 16 tokens": {`{"model":"gpt-m","input":[{"role":"developer","content":"Be brief."},{"type":"message","role":"user","content":[{"type":"input_text","text":"Name a prime number."}]}],"max_output_tokens":16`, "response.incomplete", 16},
	} {
		t.Run(name, func(t *testing.T) {
			plain := post(t, srv, "/v1/responses", tc.body+"}")
			stream := post(t, srv, "/v1/responses", tc.body+`,"stream":true}`)
			if plain.status != 200 || stream.status != 200 || strings.Contains(string(stream.body), "[DONE]") {
				t.Fatalf("%d %s\n%d %s", plain.status, plain.body, stream.status, stream.body)
			}
			want := mock.Answer("Name a prime number.", tc.maxTokens)
			if gjson.GetBytes(plain.body, "output.0.content.0.text").Str != want || gjson.GetBytes(plain.body, "usage.output_tokens").Int() == 0 {
				t.Fatalf("plain %s", plain.body)
			}
			names, data := sseEventsOf(t, string(stream.body))
			var text strings.Builder
			for i, d := range data {
				if typ := gjson.Get(d, "type").Str; typ != names[i] || gjson.Get(d, "sequence_number").Int() != int64(i) {
					t.Fatalf("event %d: name %s, data %s", i, names[i], d)
				}
				if names[i] == "response.output_text.delta" {
					text.WriteString(gjson.Get(d, "delta").Str)
				}
			}
			head := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
			tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", tc.terminal}
			if !reflect.DeepEqual(names[:4], head) || !reflect.DeepEqual(names[len(names)-4:], tail) || text.String() != want {
				t.Fatalf("events %v, text %q", names, text.String())
			}
			var got, plainObj any
			json.Unmarshal([]byte(gjson.Get(data[len(data)-1], "response").Raw), &got)
			json.Unmarshal(plain.body, &plainObj)
			if !reflect.DeepEqual(got, plainObj) {
				t.Fatalf("terminal response %s\nplain %s", gjson.Get(data[len(data)-1], "response").Raw, plain.body)
			}
		})
	}
	bad := post(t, srv, "/v1/responses", `{"model":"m","input":"x","max_output_tokens":8}`)
	if bad.status != 400 || gjson.GetBytes(bad.body, "error.param").Str != "max_output_tokens" {
		t.Errorf("max_output_tokens 8: %d %s", bad.status, bad.body)
	}
	if none := post(t, srv, "/v1/responses", `{"model":"m"}`); none.status != 400 {
		t.Errorf("no input: %d %s", none.status, none.body)
	}
}

// TestResponsesMidStreamShapes: the mid-stream fault ends Responses
// streams in each of the three shapes captured traffic and the spec show.
func TestResponsesMidStreamShapes(t *testing.T) {
	srv, _ := start(t, mock.Config{MidStreamRate: 1})
	seen := map[string]bool{}
	for i := range 30 {
		res := post(t, srv, "/v1/responses", fmt.Sprintf(`{"model":"m","input":"Question %d, a long one to stream several deltas.","stream":true}`, i))
		names, data := sseEventsOf(t, string(res.body))
		last := data[len(data)-1]
		switch {
		case names[len(names)-1] == "response.failed" && gjson.Get(last, "response.error.code").Str == "server_error":
			seen["failed"] = true
		case names[len(names)-1] == "error" && gjson.Get(last, "error.message").Exists():
			seen["nested"] = true
		case names[len(names)-1] == "error" && gjson.Get(last, "message").Exists():
			seen["flat"] = true
		default:
			t.Fatalf("stream ends with %s %s", names[len(names)-1], last)
		}
	}
	if len(seen) != 3 {
		t.Errorf("shapes seen: %v", seen)
	}
}
