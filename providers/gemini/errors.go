package gemini

import (
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// Detail types of a google.rpc Status (wire-formats §5.5).
const (
	typeErrorInfo    = "type.googleapis.com/google.rpc.ErrorInfo"
	typeQuotaFailure = "type.googleapis.com/google.rpc.QuotaFailure"
	typeRetryInfo    = "type.googleapis.com/google.rpc.RetryInfo"
)

// statusError classifies a non-2xx answer.
func (p *Provider) statusError(resp *http.Response) error {
	e := p.cfg.StatusError(resp, requestIDHeader)
	classifyBody(e)
	return e
}

// classifyBody fills e (a non-2xx answer with its status and body) from
// the google.rpc Status in its body and refines its class.
func classifyBody(e *providers.Error) {
	root := gjson.ParseBytes(e.Body)
	if root.IsArray() { // a stream without alt=sse wraps its error in an array
		root = root.Get("0")
	}
	fillError(e, root)
	if e.Message == "" && !gjson.ValidBytes(e.Body) {
		// A proxy's HTML or text page: its start is the best message there is.
		e.Message = strings.TrimSpace(string(e.Body[:min(len(e.Body), 200)]))
	}
	classify(e, root.Get("error.details"))
}

// fillError copies a google.rpc Status ({"error":{"code","message",
// "status","details"}}) into e: Type is the canonical status name
// (RESOURCE_EXHAUSTED), Code the ErrorInfo reason (API_KEY_INVALID), and
// a RetryInfo's retryDelay is the retry-after hint, before any header's.
func fillError(e *providers.Error, root gjson.Result) {
	obj := root.Get("error")
	e.Type = obj.Get("status").Str
	e.Message = obj.Get("message").Str
	obj.Get("details").ForEach(func(_, d gjson.Result) bool {
		switch d.Get("@type").Str {
		case typeErrorInfo:
			if e.Code == "" {
				e.Code = d.Get("reason").Str
			}
		case typeRetryInfo:
			if delay, ok := parseDelay(d.Get("retryDelay").Str); ok {
				e.RetryAfter, e.HasRetryAfter = delay, true
			}
		}
		return true
	})
}

// parseDelay reads a protobuf Duration in its JSON form ("38s", "0.5s"),
// bounded like any retry-after hint.
func parseDelay(s string) (time.Duration, bool) {
	if !strings.HasSuffix(s, "s") {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return min(d, providers.MaxRetryAfter), true
}

// classify refines e's class (from its HTTP status) by the canonical
// status and the details:
//   - a bad key is a 400 INVALID_ARGUMENT with reason API_KEY_INVALID:
//     every request fails alike, so it is an auth error;
//   - FAILED_PRECONDITION (no free tier in the region, billing not set up)
//     and PERMISSION_DENIED likewise stop the run;
//   - RESOURCE_EXHAUSTED is a rate limit, except that a quota whose limit
//     is 0 (the model has no quota on this tier) is exhausted for good
//     (ClassQuota), and a PerDay quota marks the error Daily (and drops
//     its retryDelay, which is no hint for a day's quota);
//   - UNAVAILABLE is an overload; CANCELLED and DEADLINE_EXCEEDED are
//     server errors worth another attempt.
func classify(e *providers.Error, details gjson.Result) {
	switch e.Type {
	case "INVALID_ARGUMENT":
		if e.Code == "API_KEY_INVALID" || strings.Contains(e.Message, "API key not valid") {
			e.Class = providers.ClassAuth
		}
	case "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNAUTHENTICATED":
		e.Class = providers.ClassAuth
	case "RESOURCE_EXHAUSTED":
		e.Class = providers.ClassRateLimited
	case "UNAVAILABLE":
		e.Class = providers.ClassOverloaded
	case "CANCELLED", "DEADLINE_EXCEEDED", "INTERNAL", "ABORTED":
		e.Class = providers.ClassServer
	}
	if e.Class != providers.ClassRateLimited {
		return
	}
	details.ForEach(func(_, d gjson.Result) bool {
		if d.Get("@type").Str != typeQuotaFailure {
			return true
		}
		d.Get("violations").ForEach(func(_, v gjson.Result) bool {
			if q := v.Get("quotaValue"); q.Exists() && q.String() == "0" {
				e.Class = providers.ClassQuota
			}
			if strings.Contains(v.Get("quotaId").Str, "PerDay") || strings.Contains(v.Get("quotaMetric").Str, "per_day") {
				e.Daily = true
			}
			return true
		})
		return true
	})
	if e.Daily {
		// Its retryDelay counts seconds to the next minute, not to the
		// day's reset (midnight Pacific): it is no hint for this quota.
		e.RetryAfter, e.HasRetryAfter = 0, false
	}
}
