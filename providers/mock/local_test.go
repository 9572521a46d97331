package mock_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestNoUsage: with NoUsage the OpenAI answers carry no usage, plain or
// streamed with include_usage; the text is the same.
func TestNoUsage(t *testing.T) {
	srv, _ := start(t, mock.Config{NoUsage: true})
	plain := post(t, srv, "/v1/chat/completions", oaBody("Hi there.", ""))
	if plain.status != 200 || gjson.GetBytes(plain.body, "usage").Exists() || gjson.GetBytes(plain.body, "choices.0.message.content").Str != mock.Answer("Hi there.", 0) {
		t.Fatalf("plain: %s", plain.body)
	}
	stream := post(t, srv, "/v1/chat/completions", oaBody("Hi there.", `,"stream":true,"stream_options":{"include_usage":true}`))
	if stream.status != 200 || strings.Contains(string(stream.body), "usage") || !strings.HasSuffix(string(stream.body), "data: [DONE]\n\n") {
		t.Fatalf("stream: %s", stream.body)
	}
}
