package providers

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

// This file turns a failed attempt into words a user acts on: what the
// network said (connection refused, no such host, a TLS failure) or the
// HTTP status and the provider's message, and, for the mistakes of setup
// that fail every request the same way, a hint at the fix.

// maxCause bounds a cause's length: it goes into one-line messages.
const maxCause = 200

// Cause describes err in a few plain words, for hold and abort messages
// and the summary: "connection refused by 127.0.0.1:9", "no such host
// api.example.invalid", "TLS: certificate signed by unknown authority",
// "timeout: no response headers within 2m0s", or "HTTP 404: <the
// provider's message>". It never holds more than the error did (keys are
// redacted there).
func Cause(err error) string {
	if err == nil {
		return ""
	}
	var pe *Error
	if errors.As(err, &pe) {
		if pe.Status != 0 && pe.Status != 200 {
			s := fmt.Sprintf("HTTP %d", pe.Status)
			if pe.Message != "" {
				s += ": " + pe.Message
			}
			return clip(s)
		}
		if pe.Err != nil {
			if c := netCause(pe.Err); c != "" {
				return c
			}
		}
		if pe.Class == ClassTimeout {
			return clip("timeout: " + pe.Message)
		}
		return clip(pe.Error())
	}
	if c := netCause(err); c != "" {
		return c
	}
	return clip(err.Error())
}

// netCause names a transport failure, or "" when err is none it knows.
func netCause(err error) string {
	var (
		dns   *net.DNSError
		op    *net.OpError
		ua    x509.UnknownAuthorityError
		host  x509.HostnameError
		inv   x509.CertificateInvalidError
		cv    *tls.CertificateVerificationError
		rh    tls.RecordHeaderError
		alert tls.AlertError
		te    *timeoutError
	)
	addr := ""
	if errors.As(err, &op) && op.Addr != nil {
		addr = " " + op.Addr.String()
	}
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host " + dns.Name
	case errors.As(err, &dns) && dns.IsTimeout:
		return "DNS lookup of " + dns.Name + " timed out"
	case errors.As(err, &dns):
		return clip("DNS lookup of " + dns.Name + " failed: " + dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused by" + addr
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable:" + addr
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable:" + addr
	case errors.As(err, &ua), errors.As(err, &host), errors.As(err, &inv), errors.As(err, &cv):
		return clip("TLS: " + tlsMessage(err))
	case errors.As(err, &rh):
		return "TLS: the server did not answer in TLS (is the base URL https:// where the server speaks http://?)"
	case errors.As(err, &alert):
		return clip("TLS: " + alert.Error())
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "TLS: the server answered in plain HTTP (use http:// in the base URL)"
	case strings.Contains(err.Error(), "TLS handshake timeout"):
		return "TLS handshake timed out with" + addr
	case errors.As(err, &te):
		return "timeout: " + te.Error()
	case op != nil && op.Op == "dial" && op.Timeout():
		return "timeout connecting to" + addr
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection without answering"
	}
	return ""
}

// tlsMessage is a certificate error's own message, without the request
// that carried it.
func tlsMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if i := strings.Index(s, "tls: "); i >= 0 {
		s = s[i+len("tls: "):]
	}
	return s
}

func clip(s string) string {
	if len(s) <= maxCause {
		return s
	}
	return s[:maxCause] + "…"
}

// ConnectionLevel reports whether err is a failure to reach the server at
// all: refused, no such host, unreachable, TLS, a connection dropped before
// any HTTP response, a connect or TLS handshake timeout. A first-byte
// timeout is not: the server was reached and may be slow.
func ConnectionLevel(err error) bool {
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 0 {
		return false
	}
	switch pe.Class {
	case ClassNetwork:
		return true
	case ClassTimeout:
		var op *net.OpError
		return (errors.As(err, &op) && op.Op == "dial") || strings.Contains(err.Error(), "TLS handshake timeout")
	}
	return false
}

// streamParam matches an error that names the stream flags llmrun sets.
var streamParam = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bstream(_options|\.include_usage)?\b`) })

// hint fills e.Hint for the failures that betray a setup mistake and fail
// every request alike: a 404 for the path (a base URL missing or
// doubling /v1), a 404 for the model, a 400 for the stream flags.
func (c *Config) hint(e *Error, url string, req *Request) {
	if e == nil || e.Hint != "" {
		return
	}
	text := e.Type + " " + e.Code + " " + e.Message
	switch {
	case e.Status == 404 && req != nil && req.Model != "" && (strings.Contains(text, "model_not_found") || namesWord(e.Message, req.Model)):
		e.Hint = fmt.Sprintf("is the model name %q right? (--model, or the input's model)", req.Model)
	case e.Status == 404 || e.Status == 405:
		e.Hint = pathHint(url)
	case e.Status == 400 && c.Stream && streamParam().MatchString(text+" "+string(e.Body)):
		e.Hint = "the server rejects the stream flags llmrun sets: try --stream=false"
	}
}

// pathHint is the hint for an endpoint URL the server does not know.
func pathHint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "check the base URL"
	}
	where := u.Redacted()
	switch {
	case strings.Contains(u.Path, "/v1/v1"):
		return fmt.Sprintf("the base URL ends in /v1 and the provider adds its own (%s): drop it", where)
	case !strings.Contains(u.Path, "/v1"):
		return fmt.Sprintf("does the base URL need /v1? (%s was not found)", where)
	}
	return fmt.Sprintf("check the base URL (%s was not found)", where)
}

// namesWord reports whether s holds word on its own, not inside another
// word ("m" is not named by "completions").
func namesWord(s, word string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(word)
		if (j == 0 || !wordByte(s[j-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		i = j + 1
	}
}

func wordByte(b byte) bool {
	return b == '_' || b == '-' || b == '.' || b == '/' || b == ':' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
