package providers

import (
	"errors"
	"strings"
	"testing"
)

func TestTranslateToGemini(t *testing.T) {
	tests := map[string]struct {
		from     Format
		in, want string
	}{
		"OpenAI: system, turns, generation settings, JSON schema, inline image": {FormatOpenAI,
			`{"model":"gemini-2.5-flash","messages":[{"role":"system","content":"Be terse."},{"role":"developer","content":[{"type":"text","text":"Use \"quotes\"."}]},
			  {"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}}]},
			  {"role":"assistant","content":"A cat."},{"role":"user","content":"Sure?"}],
			 "max_completion_tokens":64,"temperature":1.5,"top_p":0.9,"n":2,"seed":7,"presence_penalty":0.1,"frequency_penalty":0.2,"stop":"END","user":"u1",
			 "response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"}}}}`,
			`{"model":"gemini-2.5-flash","systemInstruction":{"parts":[{"text":"Be terse."},{"text":"Use \"quotes\"."}]},
			  "contents":[{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0K"}}]},{"role":"model","parts":[{"text":"A cat."}]},{"role":"user","parts":[{"text":"Sure?"}]}],
			  "generationConfig":{"maxOutputTokens":64,"temperature":1.5,"topP":0.9,"candidateCount":2,"seed":7,"presencePenalty":0.1,"frequencyPenalty":0.2,"stopSequences":["END"],
			    "responseMimeType":"application/json","responseJsonSchema":{"type":"object"}}}`},
		"OpenAI: max_tokens, stop list, json_object, no system": {FormatOpenAI,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stop":["a","b"],"response_format":{"type":"json_object"}}`,
			`{"model":"m","contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5,"stopSequences":["a","b"],"responseMimeType":"application/json"}}`},
		"Anthropic, through OpenAI": {FormatAnthropic,
			`{"model":"m","max_tokens":100,"system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]}],"stop_sequences":["x"]}`,
			`{"model":"m","systemInstruction":{"parts":[{"text":"S"}]},"contents":[{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/jpeg","data":"/9j/"}}]}],"generationConfig":{"maxOutputTokens":100,"stopSequences":["x"]}}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Translate([]byte(tc.in), tc.from, FormatGemini)
			if err != nil {
				t.Fatal(err)
			}
			jsonEq(t, got, tc.want)
		})
	}
}

func TestTranslateFromGemini(t *testing.T) {
	tests := map[string]struct {
		to       Format
		in, want string
	}{
		"to OpenAI: one text part is a string, several are parts; model turns are the assistant's": {FormatOpenAI,
			`{"model":"gemini-2.5-flash","systemInstruction":{"parts":[{"text":"Be terse."}]},
			  "contents":[{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0K"}}]},{"role":"model","parts":[{"text":"A cat."}]},{"parts":[{"text":"Sure?"}]}],
			  "generationConfig":{"maxOutputTokens":64,"temperature":0.5,"topP":0.9,"candidateCount":1,"seed":3,"stopSequences":["END"],"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}},
			  "safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`,
			`{"model":"gemini-2.5-flash","messages":[{"role":"system","content":"Be terse."},
			  {"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}}]},
			  {"role":"assistant","content":"A cat."},{"role":"user","content":"Sure?"}],
			  "max_completion_tokens":64,"temperature":0.5,"top_p":0.9,"n":1,"seed":3,"stop":["END"],
			  "response_format":{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object"}}}}`},
		"to OpenAI: the REST samples' snake case; JSON mode that never says JSON is told to": {FormatOpenAI,
			`{"system_instruction":{"parts":[{"text":"S"},{"text":"T"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":9,"response_mime_type":"application/json"}}`,
			`{"messages":[{"role":"system","content":"Respond with JSON."},{"role":"system","content":[{"type":"text","text":"S"},{"type":"text","text":"T"}]},{"role":"user","content":"hi"}],"max_completion_tokens":9,"response_format":{"type":"json_object"}}`},
		"to OpenAI: JSON mode whose prompt says JSON is left alone": {FormatOpenAI,
			`{"contents":[{"role":"user","parts":[{"text":"List three primes as a Json array."}]}],"generationConfig":{"responseMimeType":"application/json"},"safetySettings":[]}`,
			`{"messages":[{"role":"user","content":"List three primes as a Json array."}],"response_format":{"type":"json_object"}}`},
		"to Anthropic, through OpenAI: the default cap when none is set": {FormatAnthropic,
			`{"model":"m","contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1024}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Translate([]byte(tc.in), FormatGemini, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			jsonEq(t, got, tc.want)
		})
	}
}

// TestTranslateGeminiRefuses: what would change the conversation's
// meaning is refused, naming the pair asked for and the field.
func TestTranslateGeminiRefuses(t *testing.T) {
	tests := map[string]struct {
		from, to Format
		in, msg  string
	}{
		"tool calls":               {FormatOpenAI, FormatGemini, `{"messages":[{"role":"assistant","content":null,"tool_calls":[]}]}`, "tool calls"},
		"tool role":                {FormatOpenAI, FormatGemini, `{"messages":[{"role":"tool","content":"x"}]}`, `role "tool"`},
		"image by URL":             {FormatOpenAI, FormatGemini, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]}]}`, "data: URLs"},
		"six stops":                {FormatOpenAI, FormatGemini, `{"messages":[{"role":"user","content":"x"}],"stop":["1","2","3","4","5","6"]}`, "Gemini accepts 5"},
		"tools":                    {FormatOpenAI, FormatGemini, `{"messages":[{"role":"user","content":"x"}],"tools":[]}`, "tools"},
		"Anthropic tool use":       {FormatAnthropic, FormatGemini, `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "tool_result"},
		"function call part":       {FormatGemini, FormatOpenAI, `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}]}`, "functionCall part"},
		"file part":                {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"fileData":{"fileUri":"files/x","mimeType":"image/png"}}]}]}`, "fileData part"},
		"audio inline":             {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"inlineData":{"mimeType":"audio/wav","data":"AA"}}]}]}`, "audio/wav"},
		"thought part":             {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"text":"hm","thought":true}]}]}`, "thought"},
		"cached content":           {FormatGemini, FormatOpenAI, `{"cachedContent":"cachedContents/x","contents":[]}`, "cachedContent"},
		"OpenAPI response schema":  {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT"}}}`, "responseSchema"},
		"five stops to OpenAI":     {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"stopSequences":["1","2","3","4","5"]}}`, "OpenAI accepts 4"},
		"odd role":                 {FormatGemini, FormatAnthropic, `{"contents":[{"role":"function","parts":[{"text":"x"}]}]}`, `role "function"`},
		"not an object":            {FormatGemini, FormatOpenAI, `[1]`, "not a JSON object"},
		"embeddings body":          {FormatOpenAI, FormatGemini, `{"model":"m","input":["a","b"]}`, "embeddings"},
		"topK":                     {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"topK":40}}`, "topK has no OpenAI equivalent"},
		"snake case top_k":         {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"text":"x"}]}],"generation_config":{"top_k":40}}`, "top_k"},
		"unknown field":            {FormatGemini, FormatOpenAI, `{"contents":[{"parts":[{"text":"x"}]}],"fancyNewThing":{}}`, "fancyNewThing has no openai translation"},
		"JSON output to Anthropic": {FormatGemini, FormatAnthropic, `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`, "response_format (JSON output) has no Anthropic equivalent"},
		"logit_bias to Gemini":     {FormatOpenAI, FormatGemini, `{"messages":[{"role":"user","content":"x"}],"logit_bias":{"1":5}}`, "logit_bias"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Translate([]byte(tc.in), tc.from, tc.to)
			var te *TranslateError
			if !errors.As(err, &te) || te.From != tc.from || te.To != tc.to || !strings.Contains(te.Reason, tc.msg) {
				t.Fatalf("err %v, want a %v→%v TranslateError about %q", err, tc.from, tc.to, tc.msg)
			}
		})
	}
}

// TestTranslateGeminiRoundTrip: what both formats have survives
// OpenAI → Gemini → OpenAI unchanged.
func TestTranslateGeminiRoundTrip(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"system","content":"Answer in JSON."},{"role":"user","content":[{"type":"text","text":"a\nb"},{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklG"}}]},{"role":"assistant","content":"c"},{"role":"user","content":"d"}],"max_completion_tokens":8,"temperature":0.3,"stop":["x"],"response_format":{"type":"json_object"}}`
	g, err := Translate([]byte(in), FormatOpenAI, FormatGemini)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Translate(g, FormatGemini, FormatOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, back, in)
}

func TestPromptBuildGemini(t *testing.T) {
	b, err := Prompt{System: "S", Prompt: "P", Model: "m", MaxTokens: 7}.Build(FormatGemini)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, b, `{"model":"m","systemInstruction":{"parts":[{"text":"S"}]},"contents":[{"role":"user","parts":[{"text":"P"}]}],"generationConfig":{"maxOutputTokens":7}}`)
	if MaxTokensOf(b) != 7 || CheckTurns(b, FormatGemini) != nil || CheckTurns(b, FormatOpenAI) == nil {
		t.Errorf("MaxTokensOf %d, CheckTurns %v", MaxTokensOf(b), CheckTurns(b, FormatGemini))
	}
	if err := CheckTurns([]byte(`{"contents":[]}`), FormatGemini); err == nil || !strings.Contains(err.Error(), "at least one turn") {
		t.Errorf("empty contents: %v", err)
	}
	if n := MaxTokensOf([]byte(`{"generation_config":{"max_output_tokens":3}}`)); n != 3 {
		t.Errorf("snake case cap %d", n)
	}
}
