package openai

import "testing"

// BenchmarkResponsesEvent is one delta event of a Responses stream, the
// event a streamed answer is made of.
func BenchmarkResponsesEvent(b *testing.B) {
	ev := []byte(`{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello","logprobs":[]}`)
	var s rstream
	b.ReportAllocs()
	for b.Loop() {
		if final, err := s.event(ev); final != nil || err != nil {
			b.Fatal(final, err)
		}
	}
	if !s.content {
		b.Fatal("the delta carried no content")
	}
}
