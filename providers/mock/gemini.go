package mock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// gemini is the dialect of Gemini's generateContent (wire-formats §5): the
// model and the choice to stream are in the URL, so each request gets its
// own value. Streams are CRLF-framed data-only events without a
// terminator; errors are google.rpc Status bodies, with the retry hint in
// a RetryInfo detail rather than a header; no rate-limit headers are sent.
type gemini struct {
	model  string // without "models/"
	stream bool
	embed  uint8 // gmEmbedOne, gmEmbedMany: an embeddings route (gemini_embed.go)
}

// Routes of the Gemini API, under its version prefix.
const geminiPrefix = "/v1beta/"

func (gemini) tag() byte               { return 'g' }
func (gemini) requestIDHeader() string { return "x-request-id" }

// noRetryHeaders: Gemini says when to retry in the error body only.
func (gemini) noRetryHeaders() {}

// handleGemini routes POST /v1beta/models/{model}:{method}.
func (s *Server) handleGemini(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	switch method {
	case "generateContent":
		s.handleAPI(gemini{model: model})(w, r)
	case "streamGenerateContent":
		if r.URL.Query().Get("alt") != "sse" {
			s.badRequest(w, gemini{}, "", errInvalid("alt", "this mock streams only server-sent events: add ?alt=sse"))
			return
		}
		s.handleAPI(gemini{model: model, stream: true})(w, r)
	case "embedContent":
		s.handleAPI(gemini{model: model, embed: gmEmbedOne})(w, r)
	case "batchEmbedContents":
		s.handleAPI(gemini{model: model, embed: gmEmbedMany})(w, r)
	case "countTokens":
		s.handleGeminiCountTokens(w, r)
	case "batchGenerateContent":
		s.batches.inFlight.Add(1)
		defer s.batches.inFlight.Add(-1)
		s.handleGMBatchCreate(w, r, model)
	default:
		s.handleNotFound(w, r)
	}
}

// geminiPart is a content part as the mock reads it.
type geminiPart struct {
	Text       *string         `json:"text"`
	InlineData json.RawMessage `json:"inlineData"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

// text joins the content's text parts with "\n".
func (c geminiContent) text() string {
	var texts []string
	for _, p := range c.Parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func (g gemini) parse(body []byte) (*request, *apiError) {
	if g.embed != 0 {
		return g.parseEmbed(body)
	}
	var in struct {
		Contents          []geminiContent `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		GenerationConfig  struct {
			MaxOutputTokens *int `json:"maxOutputTokens"`
		} `json:"generationConfig"`
		Stream        json.RawMessage `json:"stream"`
		StreamOptions json.RawMessage `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errInvalid("", "Invalid JSON payload received. "+err.Error())
	}
	// The real API rejects unknown fields; these are the ones a client
	// that forgets it is talking to Gemini would send.
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"stream", in.Stream}, {"stream_options", in.StreamOptions}} {
		if f.v != nil {
			return nil, errInvalid(f.name, `Invalid JSON payload received. Unknown name "`+f.name+`": Cannot find field.`)
		}
	}
	if len(in.Contents) == 0 {
		return nil, errInvalid("contents", "* GenerateContentRequest.contents: contents is not specified")
	}
	req := &request{model: g.model, stream: g.stream}
	if m := in.GenerationConfig.MaxOutputTokens; m != nil {
		if *m < 1 {
			return nil, errInvalid("generationConfig.maxOutputTokens", "* GenerateContentRequest.generation_config.max_output_tokens: must be positive")
		}
		req.maxTokens = *m
	}
	var prompt []byte // the conversation as the implicit cache sees it
	add := func(role string, c geminiContent) { prompt = req.turn(prompt, role, c.text()) }
	if in.SystemInstruction != nil {
		add("system", *in.SystemInstruction)
	}
	for i, c := range in.Contents {
		role := c.Role
		switch role {
		case "":
			role = "user"
		case "user", "model":
		default:
			return nil, errInvalid("contents", "* GenerateContentRequest.contents["+strconv.Itoa(i)+"].role: Please use a valid role: user, model.")
		}
		if len(c.Parts) == 0 {
			return nil, errInvalid("contents", "* GenerateContentRequest.contents["+strconv.Itoa(i)+"].parts: contents.parts must not be empty.")
		}
		add(role, c)
		if role == "user" {
			req.prompt = c.text()
		}
	}
	req.prefixes = geminiPrefixes(g.model, prompt)
	return req, nil
}

// geminiPrefixes are the implicitly cached prefixes of a prompt: from
// 1,024 tokens on (Gemini 2.5 Flash's minimum), every 128 tokens, as the
// OpenAI dialect caches, under Gemini's own tag. Reads are not billed as
// writes.
func geminiPrefixes(model string, prompt []byte) []prefix { return stepPrefixes('g', model, prompt) }

// geminiStatusName is the canonical google.rpc status of an HTTP status.
func geminiStatusName(status int) string {
	switch status {
	case 400, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// errorStatus: a bad key is a 400 on the Gemini API, not a 401.
func (gemini) errorStatus(e *apiError) int {
	if e.oaCode == "invalid_api_key" {
		return 400
	}
	return e.status
}

// Detail types of the google.rpc Status bodies.
const (
	gmErrorInfo    = `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"`
	gmQuotaFailure = `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/`
	gmRetryInfo    = `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"`
)

func (g gemini) errorBody(e *apiError, _ string) []byte {
	status := g.errorStatus(e)
	msg, details := e.message, ""
	switch {
	case e.oaCode == "invalid_api_key":
		msg = "API key not valid. Please pass a valid API key."
		if e.anMessage == "x-api-key header is required" {
			msg = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
		}
		details = gmErrorInfo + `API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}`
	case e.oaCode == "insufficient_quota":
		msg = "You exceeded your current quota, please check your plan and billing details. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0"
		details = gmQuotaFailure + `generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"` + g.model + `"},"quotaValue":"0"}]}`
	case status == 429:
		msg = "You exceeded your current quota, please check your plan and billing details."
		if e.quotaID != "" {
			details = gmQuotaFailure + e.quotaMetric + `","quotaId":"` + e.quotaID + `","quotaDimensions":{"location":"global","model":"` + g.model + `"},"quotaValue":"` + formatLimit(e.limit) + `"}]}`
		} else {
			msg = "Resource has been exhausted (e.g. check quota)."
		}
		if e.retryAfter > 0 {
			if details != "" {
				details += ","
			}
			details += gmRetryInfo + strconv.FormatInt(int64((e.retryAfter+time.Second-1)/time.Second), 10) + `s"}`
		}
	case status == 503:
		msg = "The model is overloaded. Please try again later."
	case status >= 500:
		msg = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	}
	b := append(make([]byte, 0, 256+len(details)), `{"error":{"code":`...)
	b = appendInt(b, status)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	b = append(b, `,"status":"`...)
	if e.gmStatus != "" {
		b = append(b, e.gmStatus...)
	} else {
		b = append(b, geminiStatusName(status)...)
	}
	b = append(b, '"')
	if details != "" {
		b = append(b, `,"details":[`...)
		b = append(b, details...)
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

// setLimitHeaders: Gemini sends no rate-limit headers.
func (gemini) setLimitHeaders(http.Header, limitState, time.Time) {}

func (gemini) finishReason(c *completion) string {
	if c.truncated {
		return "MAX_TOKENS"
	}
	return "STOP"
}

// responseID is the answer's responseId, derived from its id.
func (gemini) responseID(c *completion) string {
	return strings.TrimPrefix(c.id, "chatcmpl-")
}

// appendResponse writes one GenerateContentResponse: a candidate with text
// (and finishReason, when finish is set) and the usage so far.
func (g gemini) appendResponse(b []byte, c *completion, text string, finish bool, outTokens int) []byte {
	b = append(b, `{"candidates":[{"content":{"parts":[{"text":`...)
	b = appendString(b, text)
	b = append(b, `}],"role":"model"}`...)
	if finish {
		b = append(b, `,"finishReason":"`...)
		b = append(b, g.finishReason(c)...)
		b = append(b, '"')
	}
	b = append(b, `,"index":0}],"usageMetadata":{"promptTokenCount":`...)
	b = appendInt(b, c.inTokens)
	if outTokens > 0 {
		b = append(b, `,"candidatesTokenCount":`...)
		b = appendInt(b, outTokens)
	}
	b = append(b, `,"totalTokenCount":`...)
	b = appendInt(b, c.inTokens+outTokens)
	if c.cacheRead > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = appendInt(b, c.cacheRead)
	}
	b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
	b = appendInt(b, c.inTokens)
	b = append(b, `}]},"modelVersion":`...)
	b = appendString(b, c.model)
	b = append(b, `,"responseId":`...)
	b = appendString(b, g.responseID(c))
	return append(b, '}')
}

func (g gemini) plainBody(c *completion) []byte {
	if c.embed != nil {
		return g.embedBody(c)
	}
	return g.appendResponse(make([]byte, 0, 512+len(c.text)), c, c.text, true, c.outTokens)
}

// event frames one data: event as Gemini does, CRLF.
func geminiEvent(b []byte, data func([]byte) []byte) []byte {
	b = append(b, "data: "...)
	b = data(b)
	return append(b, "\r\n\r\n"...)
}

// streamStart: a Gemini stream opens with its first text.
func (gemini) streamStart(b []byte, _ *completion) []byte { return b }

func (g gemini) streamDelta(b []byte, c *completion, text string) []byte {
	return geminiEvent(b, func(b []byte) []byte { return g.appendResponse(b, c, text, false, 0) })
}

// streamFinish sends the finishReason and the final usage with an empty
// text part, as the last chunk often is.
func (g gemini) streamFinish(b []byte, c *completion) []byte {
	return geminiEvent(b, func(b []byte) []byte { return g.appendResponse(b, c, "", true, c.outTokens) })
}

func (gemini) streamError(b []byte, _ *completion) []byte {
	return append(b, `data: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`+"\r\n\r\n"...)
}
