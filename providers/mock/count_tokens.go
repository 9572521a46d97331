package mock

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// ServerTokens is how the mock's count_tokens endpoints count a text: one
// token per started 10 bytes of every 33 of ASCII (3.3 bytes a token) and
// one per non-ASCII character. It is deliberately not llmrun's local rule
// (bytes/4) nor the mock's usage rule (CountTokens): a text with accents or
// CJK costs more here than bytes/4 says, so that calibrating an estimate
// against count_tokens is testable. Each message adds messageOverhead and
// each request countBase.
func ServerTokens(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		other++
		i += n
	}
	return (ascii*10+32)/33 + other
}

// countBase is the fixed part of a count_tokens answer.
const countBase = 3

// countText is a content that is either a string or a list of blocks or
// parts with text.
type countText json.RawMessage

func (c countText) tokens() int {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return ServerTokens(s)
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(c, &blocks)
	n := 0
	for _, b := range blocks {
		n += ServerTokens(b.Text)
	}
	return n
}

// handleCountTokens answers Anthropic's POST /v1/messages/count_tokens:
// {"input_tokens":N} for the messages and system prompt of the body.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if !s.readCount(w, r, anthropic{}, r.Header.Get("x-api-key") != "", &body) {
		return
	}
	if body.Model == "" || len(body.Messages) == 0 {
		s.badRequest(w, anthropic{}, "", errInvalid("messages", "count_tokens needs model and messages"))
		return
	}
	n := countBase
	if len(body.System) > 0 {
		n += countText(body.System).tokens() + messageOverhead
	}
	for _, m := range body.Messages {
		n += countText(m.Content).tokens() + messageOverhead
	}
	s.writeCount(w, `{"input_tokens":`, n)
}

// handleGeminiCountTokens answers models/{model}:countTokens:
// {"totalTokens":N} for contents (or generateContentRequest.contents) and
// the system instruction.
func (s *Server) handleGeminiCountTokens(w http.ResponseWriter, r *http.Request) {
	type req struct {
		Contents          []geminiContent `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
	}
	var body struct {
		req
		GenerateContentRequest *req `json:"generateContentRequest"`
	}
	key := r.Header.Get("x-goog-api-key") != "" || r.URL.Query().Get("key") != ""
	if !s.readCount(w, r, gemini{}, key, &body) {
		return
	}
	in := body.req
	if body.GenerateContentRequest != nil {
		in = *body.GenerateContentRequest
	}
	n := countBase
	if in.SystemInstruction != nil {
		n += ServerTokens(in.SystemInstruction.text()) + messageOverhead
	}
	for _, c := range in.Contents {
		n += ServerTokens(c.text()) + messageOverhead
	}
	s.writeCount(w, `{"totalTokens":`, n)
}

// readCount checks the key and decodes a count request's body into v.
func (s *Server) readCount(w http.ResponseWriter, r *http.Request, d dialect, key bool, v any) bool {
	if !key {
		s.bump(&s.stats.Unauthorized)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write(d.errorBody(&apiError{status: http.StatusUnauthorized, message: "missing API key"}, ""))
		return false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		s.badRequest(w, d, "", errInvalid("body", "not a JSON object"))
		return false
	}
	return true
}

func (s *Server) writeCount(w http.ResponseWriter, prefix string, n int) {
	s.bump(&s.stats.CountTokens)
	w.Header().Set("Content-Type", "application/json")
	w.Write(strconv.AppendInt([]byte(prefix), int64(n), 10))
	w.Write([]byte("}"))
}
