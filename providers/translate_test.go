package providers

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func jsonEq(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("invalid output %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("invalid want %v: %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestTranslateOpenAIToAnthropic(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"system string, max_completion_tokens, stop string, user": {
			`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Name a prime.\n\"Now\""}],"max_completion_tokens":64,"temperature":0.2,"top_p":0.9,"stop":"END","user":"u1","n":1,"seed":null,"presence_penalty":0,"store":false,"stream":true,"stream_options":{"include_usage":true}}`,
			`{"model":"gpt-4o-mini","system":"You are terse.","messages":[{"role":"user","content":"Name a prime.\n\"Now\""}],"max_tokens":64,"temperature":0.2,"top_p":0.9,"stop_sequences":["END"],"metadata":{"user_id":"u1"}}`,
		},
		"developer + system become blocks; max_tokens; stop array": {
			`{"model":"o3","messages":[{"role":"developer","content":"A"},{"role":"system","content":[{"type":"text","text":"B"}]},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"again"}],"max_tokens":10,"temperature":1,"stop":["x","y"],"response_format":{"type":"text"}}`,
			`{"model":"o3","system":[{"type":"text","text":"A"},{"type":"text","text":"B"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"again"}],"max_tokens":10,"temperature":1,"stop_sequences":["x","y"]}`,
		},
		"no cap gets the default; content parts and images": {
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}},{"type":"image_url","image_url":{"url":"https://x.test/cat.jpg","detail":"low"}}]}],"max_completion_tokens":null}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}},{"type":"image","source":{"type":"url","url":"https://x.test/cat.jpg"}}]}],"max_tokens":1024}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Translate([]byte(tc.in), FormatOpenAI, FormatAnthropic)
			if err != nil {
				t.Fatal(err)
			}
			jsonEq(t, got, tc.want)
		})
	}
	got, err := TranslateMax([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`), FormatOpenAI, FormatAnthropic, 77)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, got, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":77}`)
}

func TestTranslateAnthropicToOpenAI(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"system string, stop sequences, metadata": {
			`{"model":"claude-sonnet-4-5","max_tokens":256,"system":"Answer in one word.","messages":[{"role":"user","content":"Name a prime number."}],"stop_sequences":["\n\n"],"temperature":0.5,"top_p":0.8,"metadata":{"user_id":"u2"},"stream":true,"thinking":{"type":"disabled"}}`,
			`{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"Answer in one word."},{"role":"user","content":"Name a prime number."}],"max_completion_tokens":256,"temperature":0.5,"top_p":0.8,"stop":["\n\n"],"user":"u2"}`,
		},
		"system blocks, content blocks, images": {
			`{"model":"c","max_tokens":5,"system":[{"type":"text","text":"S1","cache_control":{"type":"ephemeral"}},{"type":"text","text":"S2"}],"messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}},{"type":"image","source":{"type":"url","url":"https://x.test/a.png"}}]},{"role":"assistant","content":[{"type":"text","text":"ok"}]}]}`,
			`{"model":"c","messages":[{"role":"system","content":[{"type":"text","text":"S1"},{"type":"text","text":"S2"}]},{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},{"role":"assistant","content":[{"type":"text","text":"ok"}]}],"max_completion_tokens":5}`,
		},
		"single system block becomes a string": {
			`{"model":"c","max_tokens":5,"system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":"q"}]}`,
			`{"model":"c","messages":[{"role":"system","content":"S"},{"role":"user","content":"q"}],"max_completion_tokens":5}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Translate([]byte(tc.in), FormatAnthropic, FormatOpenAI)
			if err != nil {
				t.Fatal(err)
			}
			jsonEq(t, got, tc.want)
		})
	}
}

func TestTranslateRoundTrip(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"caf\u00e9 \"x\""}],"max_completion_tokens":9,"temperature":0.3,"stop":["a"]}`
	a, err := Translate([]byte(in), FormatOpenAI, FormatAnthropic)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Translate(a, FormatAnthropic, FormatOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, back, in)
}

func TestTranslateSameFormat(t *testing.T) {
	in := []byte(`not even json`)
	for _, f := range []Format{FormatOpenAI, FormatAnthropic} {
		got, err := Translate(in, f, f)
		if err != nil || &got[0] != &in[0] {
			t.Fatalf("%v: want the body itself, got %q %v", f, got, err)
		}
	}
}

func TestTranslateErrors(t *testing.T) {
	tests := map[string]struct {
		in       string
		from, to Format
	}{
		"invalid json":         {`{"model":`, FormatOpenAI, FormatAnthropic},
		"not an object":        {`[1]`, FormatOpenAI, FormatAnthropic},
		"tool message":         {`{"messages":[{"role":"tool","content":"42","tool_call_id":"c1"}]}`, FormatOpenAI, FormatAnthropic},
		"assistant tool calls": {`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]}]}`, FormatOpenAI, FormatAnthropic},
		"audio part":           {`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, FormatOpenAI, FormatAnthropic},
		"tool_use block":       {`{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]}`, FormatAnthropic, FormatOpenAI},
		"document block":       {`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`, FormatAnthropic, FormatOpenAI},
		"too many stops":       {`{"max_tokens":1,"messages":[],"stop_sequences":["a","b","c","d","e"]}`, FormatAnthropic, FormatOpenAI},
		"unknown format":       {`{}`, FormatOpenAI, Format(9)},
	}
	for name, in := range map[string]string{
		"seed":              `"seed":7`,
		"n":                 `"n":2`,
		"presence_penalty":  `"presence_penalty":0.5`,
		"frequency_penalty": `"frequency_penalty":-1`,
		"response_format":   `"response_format":{"type":"json_object"}`,
		"temperature 1.5":   `"temperature":1.5`,
		"logprobs":          `"logprobs":true`,
		"unknown field":     `"shiny":1`,
	} {
		tests["OpenAI to Anthropic: "+name] = struct {
			in       string
			from, to Format
		}{`{"model":"m","messages":[{"role":"user","content":"json please"}],` + in + `}`, FormatOpenAI, FormatAnthropic}
	}
	tests["Anthropic to OpenAI: top_k"] = struct {
		in       string
		from, to Format
	}{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"top_k":5}`, FormatAnthropic, FormatOpenAI}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Translate([]byte(tc.in), tc.from, tc.to)
			var te *TranslateError
			if !errors.As(err, &te) || got != nil {
				t.Fatalf("got %s, %v; want a *TranslateError", got, err)
			}
		})
	}
}
