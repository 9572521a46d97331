package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/tidwall/gjson"
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
}

// LineError says why a request finally failed.
type LineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// cause is Message in a few plain words (providers.Cause), for the
	// summary's failures by cause; not written.
	cause string
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
	// CostUSD is what the request's answers cost by the usage the
	// provider reported (at batch prices for batch results; answers a
	// guard rejected included): a number, null when a model has no price,
	// absent when there was nothing to price.
	CostUSD json.RawMessage `json:"cost_usd,omitempty"`
	// Vars is the input record a --template prompt was made from.
	Vars json.RawMessage `json:"vars,omitempty"`
}

// lineID is the output line's "id": stable for a custom_id, so rewriting a
// line never changes it.
func lineID(customID string) string {
	sum := sha256.Sum256([]byte(customID))
	return "llmrun_req_" + hex.EncodeToString(sum[:12])
}

// Marshal encodes the line. A body that is not valid JSON (an error page from
// a proxy, say) is kept as a JSON string rather than breaking the line.
func (l *Line) Marshal() ([]byte, error) {
	if l.ID == "" {
		l.ID = lineID(l.CustomID)
	}
	if l.Response != nil && (len(l.Response.Body) == 0 || !gjson.ValidBytes(l.Response.Body)) {
		s, _ := json.Marshal(string(l.Response.Body))
		if len(l.Response.Body) == 0 {
			s = []byte("null")
		}
		l.Response.Body = s
	}
	return json.Marshal(l)
}
