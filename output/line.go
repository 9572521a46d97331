// Package output is the line every request ends as, in the output or the
// errors file: the OpenAI batch output format plus an "llmrun" object with
// what the run learned about the request. The live run (runner) and the
// batch-API route (offline) write the same lines; the checkpoint appends
// its fingerprint and seal to each.
package output

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/llmrun/llmrun/internal/jsonvalid"
	"github.com/llmrun/llmrun/providers"
)

// Line is one output or errors-file line: the OpenAI batch output format
// plus an "llmrun" object with what the run learned about the request.
type Line struct {
	ID       string      `json:"id"`
	CustomID string      `json:"custom_id"`
	Response *LineResp   `json:"response"`
	Error    *LineError  `json:"error"`
	Llmrun   LineDetails `json:"llmrun"`
}

// LineResp is the provider's response: status, request id and body.
type LineResp struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
	// Valid reports that Body is known to be valid JSON (the exchange
	// checked it): AppendMarshal writes it without scanning it again.
	Valid bool `json:"-"`
}

// LineError says why a request finally failed.
type LineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Cause is Message in a few plain words (providers.Cause), for the
	// summary's failures by cause; not written.
	Cause string `json:"-"`
}

// LineDetails is llmrun's own record of a request. It must stay the line's
// last member: the checkpoint appends the request's "fingerprint" and the
// line's "crc32c" seal to it as it writes the line.
type LineDetails struct {
	Provider     string `json:"provider"`
	Model        string `json:"model"`
	Mode         string `json:"mode,omitempty"`
	Attempts     int    `json:"attempts"`
	LatencyMS    int64  `json:"latency_ms"`
	TTFTMS       int64  `json:"ttft_ms"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// CacheRead and CacheWrite are the parts of InputTokens read from and
	// written to the provider's prompt cache.
	CacheRead  int64 `json:"cache_read_tokens,omitempty"`
	CacheWrite int64 `json:"cache_write_tokens,omitempty"`
	// Estimated reports that the provider sent no usage (a local server)
	// and the token counts are llmrun's estimate.
	Estimated bool `json:"usage_estimated,omitempty"`
	// Cached marks an answer taken from the cross-run cache (--cache):
	// not sent by this run; its usage is the original's, its cost 0.
	Cached bool `json:"cached,omitempty"`
	// CostUSD is what the request's answers cost by the usage the
	// provider reported (at batch prices for batch results; answers a
	// guard rejected included): a number, null when a model has no price,
	// absent when there was nothing to price.
	CostUSD json.RawMessage `json:"cost_usd,omitempty"`
	// Vars is the input record a --template prompt was made from.
	Vars json.RawMessage `json:"vars,omitempty"`
	// Tags are the input line's tags, so that answers break down by
	// tenant without the input.
	Tags map[string]string `json:"tags,omitempty"`
}

// lineID is the output line's "id": stable for a custom_id, so rewriting a
// line never changes it.
func lineID(customID string) string {
	sum := sha256.Sum256([]byte(customID))
	var b [len(idPrefix) + 24]byte
	return string(hex.AppendEncode(append(b[:0], idPrefix...), sum[:12]))
}

const idPrefix = "llmrun_req_"

// Marshal encodes the line. A body that is not valid JSON (an error page from
// a proxy, say) is kept as a JSON string rather than breaking the line.
func (l *Line) Marshal() ([]byte, error) {
	return l.AppendMarshal(nil)
}

// AppendMarshal appends the line as Marshal encodes it to dst (nil: a
// buffer sized for the line), so a writer can reuse its buffers.
func (l *Line) AppendMarshal(dst []byte) ([]byte, error) {
	if l.ID == "" {
		l.ID = lineID(l.CustomID)
	}
	if r := l.Response; r != nil && (len(r.Body) == 0 || !r.Valid && !jsonvalid.Valid(r.Body)) {
		s, _ := json.Marshal(string(l.Response.Body))
		if len(l.Response.Body) == 0 {
			s = []byte("null")
		}
		l.Response.Body = s
	}
	for _, raw := range []json.RawMessage{l.Llmrun.CostUSD, l.Llmrun.Vars} {
		if len(raw) > 0 && !jsonvalid.Valid(raw) {
			return json.Marshal(l) // the error encoding/json gives
		}
	}
	if dst == nil {
		dst = make([]byte, 0, 512+len(l.CustomID)+len(l.bodyOf()))
	}
	return l.appendJSON(dst), nil
}

func (l *Line) bodyOf() []byte {
	if l.Response == nil {
		return nil
	}
	return l.Response.Body
}

// appendJSON appends the line exactly as encoding/json's Marshal writes it
// (field order, omitempty, strings and raw values escaped alike; see
// TestLineMarshalMatchesEncoding), without its reflection and its
// per-byte pass over the body: a line is written per request.
func (l *Line) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = providers.AppendJSONString(b, l.ID)
	b = append(b, `,"custom_id":`...)
	b = providers.AppendJSONString(b, l.CustomID)
	b = append(b, `,"response":`...)
	if r := l.Response; r == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"status_code":`...)
		b = strconv.AppendInt(b, int64(r.StatusCode), 10)
		b = append(b, `,"request_id":`...)
		b = providers.AppendJSONString(b, r.RequestID)
		b = append(b, `,"body":`...)
		if len(r.Body) == 0 {
			b = append(b, "null"...)
		} else {
			b = providers.AppendCompactJSON(b, r.Body)
		}
		b = append(b, '}')
	}
	b = append(b, `,"error":`...)
	if e := l.Error; e == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"code":`...)
		b = providers.AppendJSONString(b, e.Code)
		b = append(b, `,"message":`...)
		b = providers.AppendJSONString(b, e.Message)
		b = append(b, '}')
	}
	d := &l.Llmrun
	b = append(b, `,"llmrun":{"provider":`...)
	b = providers.AppendJSONString(b, d.Provider)
	b = append(b, `,"model":`...)
	b = providers.AppendJSONString(b, d.Model)
	if d.Mode != "" {
		b = append(b, `,"mode":`...)
		b = providers.AppendJSONString(b, d.Mode)
	}
	for _, f := range [...]struct {
		key       string
		v         int64
		omitEmpty bool
	}{
		{`,"attempts":`, int64(d.Attempts), false}, {`,"latency_ms":`, d.LatencyMS, false}, {`,"ttft_ms":`, d.TTFTMS, false},
		{`,"input_tokens":`, d.InputTokens, false}, {`,"output_tokens":`, d.OutputTokens, false},
		{`,"cache_read_tokens":`, d.CacheRead, true}, {`,"cache_write_tokens":`, d.CacheWrite, true},
	} {
		if f.v != 0 || !f.omitEmpty {
			b = append(b, f.key...)
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	if d.Estimated {
		b = append(b, `,"usage_estimated":true`...)
	}
	if d.Cached {
		b = append(b, `,"cached":true`...)
	}
	if len(d.CostUSD) > 0 {
		b = append(b, `,"cost_usd":`...)
		b = providers.AppendCompactJSON(b, d.CostUSD)
	}
	if len(d.Vars) > 0 {
		b = append(b, `,"vars":`...)
		b = providers.AppendCompactJSON(b, d.Vars)
	}
	if len(d.Tags) > 0 {
		b = appendTags(append(b, `,"tags":`...), d.Tags)
	}
	return append(b, "}}"...)
}

// appendTags appends tags as a JSON object, its keys sorted.
func appendTags(b []byte, tags map[string]string) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(tags)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = providers.AppendJSONString(b, k)
		b = append(b, ':')
		b = providers.AppendJSONString(b, tags[k])
	}
	return append(b, '}')
}
