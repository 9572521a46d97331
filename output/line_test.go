package output

import (
	"bytes"
	"encoding/json"
	"testing"
)

// marshalBoth returns what Line.Marshal writes for l and what
// encoding/json's Marshal writes for the same line after Marshal's own
// normalisation (the id filled in, a body that is not JSON made a string):
// the bytes the line was written as before the hand-written encoder.
func marshalBoth(l Line) (got []byte, gotErr error, want []byte, wantErr error) {
	if l.Response != nil {
		r := *l.Response
		r.Body = bytes.Clone(r.Body)
		l.Response = &r
	}
	got, gotErr = l.Marshal()
	want, wantErr = json.Marshal(&l)
	return
}

func TestLineMarshalMatchesEncoding(t *testing.T) {
	resp := func(body string) *LineResp {
		return &LineResp{StatusCode: 200, RequestID: "req_1", Body: json.RawMessage(body)}
	}
	full := LineDetails{
		Provider: "openai", Model: "gpt-4o-mini", Mode: "batch", Attempts: 3, LatencyMS: 1234, TTFTMS: 56,
		InputTokens: 10, OutputTokens: -1, CacheRead: 4, CacheWrite: 2, Estimated: true,
		CostUSD: json.RawMessage(`0.000125`), Vars: json.RawMessage(`{"a": [1, 2],` + "\n" + `"b":"<x>"}`),
		Tags: map[string]string{"team": "search", "a<b": "x\"y", "env": "prod"},
	}
	cases := map[string]Line{
		"zero":                   {},
		"nil response and error": {CustomID: "r1", Llmrun: LineDetails{Provider: "openai", Model: "m"}},
		"answer":                 {CustomID: "r1", Response: resp(`{"id":"x","choices":[{"message":{"content":"hi"}}]}`)},
		"empty body":             {CustomID: "r1", Response: resp(``)},
		"nil body":               {CustomID: "r1", Response: &LineResp{StatusCode: 502}},
		"body with whitespace":   {CustomID: "r1", Response: resp(" {\n\t\"a\" : [ 1 , \"x y\" ] ,\r\n \"b\":null }\n")},
		"body with html":         {CustomID: "r1", Response: resp(`{"a":"<b>&amp;</b>","c":"x\u003cy"}`)},
		"body escaped quotes":    {CustomID: "r1", Response: resp(`{"a":"say \"<hi>\" \\","b":"\\"}`)},
		"body with U+2028":       {CustomID: "r1", Response: resp("{\"a\":\"line\u2028sep\u2029para\"}")},
		"body U+2028 and space":  {CustomID: "r1", Response: resp("{\"a\": \"line\u2028sep\"}")},
		"body invalid utf-8":     {CustomID: "r1", Response: resp("{\"a\":\"\xff\xfe ok\"}")},
		"body not json":          {CustomID: "r1", Response: resp(`<html>502 Bad Gateway</html>`)},
		"body truncated":         {CustomID: "r1", Response: resp(`{"a":`)},
		"body scalar":            {CustomID: "r1", Response: resp(`"just a string"`)},
		"error": {CustomID: "r1", Error: &LineError{Code: "rate_limited", Message: "429: \"slow down\" <&>\n\tnow\u2028\xff"},
			Response: &LineResp{StatusCode: 429, RequestID: "", Body: json.RawMessage(`{"error":{"message":"slow"}}`)}},
		"all details":        {ID: "given", CustomID: "r1", Response: resp(`{}`), Llmrun: full},
		"cost null":          {CustomID: "r1", Llmrun: LineDetails{CostUSD: json.RawMessage(`null`)}},
		"cost spaced":        {CustomID: "r1", Llmrun: LineDetails{CostUSD: json.RawMessage(" 1e-7 ")}},
		"odd custom_id":      {CustomID: "a\"b\\c\x00\x1f\u007f<>&\u2028\u2029é\xc3\x28日本"},
		"negative status":    {CustomID: "r1", Response: &LineResp{StatusCode: -1, Body: json.RawMessage(`[]`)}},
		"vars invalid":       {CustomID: "r1", Llmrun: LineDetails{Vars: json.RawMessage(`{"a":`)}},
		"cost invalid":       {CustomID: "r1", Llmrun: LineDetails{CostUSD: json.RawMessage(`1.`)}},
		"mode only":          {CustomID: "r1", Llmrun: LineDetails{Mode: "stream"}},
		"cache write only":   {CustomID: "r1", Llmrun: LineDetails{CacheWrite: 7}},
		"model with unicode": {CustomID: "r1", Llmrun: LineDetails{Provider: "p\tq", Model: "mödel\u2029"}},
	}
	for name, l := range cases {
		got, gotErr, want, wantErr := marshalBoth(l)
		if (gotErr != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", name, gotErr, wantErr)
			continue
		}
		if gotErr == nil && !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// TestLineMarshalKeepsBadBody pins Marshal's own rule, which the
// comparison with encoding/json cannot: a body that is not JSON is kept
// as a string, an empty one is null.
func TestLineMarshalKeepsBadBody(t *testing.T) {
	for body, want := range map[string]string{
		`<html>`: `"body":"\u003chtml\u003e"`,
		``:       `"body":null`,
		`{"a":`:  `"body":"{\"a\":"`,
	} {
		l := Line{CustomID: "r", Response: &LineResp{StatusCode: 502, Body: json.RawMessage(body)}}
		b, err := l.Marshal()
		if err != nil || !bytes.Contains(b, []byte(want)) {
			t.Errorf("body %q: got %s, %v; want it to hold %s", body, b, err, want)
		}
		if !json.Valid(b) {
			t.Errorf("body %q: line %s is not JSON", body, b)
		}
	}
}

// TestLineMarshalTrustsCheckedBody: a body the exchange checked (Valid)
// is written as it is, without a second scan; the same bytes unmarked
// are scanned, and kept as a string when they are not JSON.
func TestLineMarshalTrustsCheckedBody(t *testing.T) {
	const body = `{"a":` // not JSON: shows whether it was scanned
	for valid, want := range map[bool]string{true: `"body":{"a":}`, false: `"body":"{\"a\":"`} {
		l := Line{CustomID: "r", Response: &LineResp{StatusCode: 200, Body: json.RawMessage(body), Valid: valid}}
		b, err := l.Marshal()
		if err != nil || !bytes.Contains(b, []byte(want)) {
			t.Errorf("Valid %v: got %s, %v; want it to hold %s", valid, b, err, want)
		}
	}
}

func FuzzLineMarshal(f *testing.F) {
	f.Add("r1", "req", 200, []byte(`{"a":[1,2]}`), "", "", "openai", "m", "", int64(1), []byte(`0.5`), []byte(nil))
	f.Add("<&>", "", 0, []byte(" {\"a\" : \"x\u2028\"}\n"), "code", "msg\n", "p", "m\xff", "batch", int64(0), []byte(`null`), []byte(`{"v": 1}`))
	f.Add("x", "", 500, []byte("\xff"), "", "", "", "", "", int64(-3), []byte(" 1 "), []byte(`[`))
	f.Fuzz(func(t *testing.T, id, reqID string, status int, body []byte, code, msg, provider, model, mode string, n int64, cost, vars []byte) {
		l := Line{CustomID: id, Llmrun: LineDetails{
			Provider: provider, Model: model, Mode: mode, Attempts: int(n % 7), LatencyMS: n, TTFTMS: n / 2,
			InputTokens: n * 3, OutputTokens: -n, CacheRead: n & 1, CacheWrite: n & 2, Estimated: n%3 == 0,
			CostUSD: cost, Vars: vars,
		}}
		if status != 0 {
			l.Response = &LineResp{StatusCode: status, RequestID: reqID, Body: body}
		}
		if code != "" || msg != "" {
			l.Error = &LineError{Code: code, Message: msg}
		}
		got, gotErr, want, wantErr := marshalBoth(l)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("error %v, encoding/json's %v", gotErr, wantErr)
		}
		if gotErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}
