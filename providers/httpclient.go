package providers

import (
	"net"
	"net/http"
	"time"
)

// NewHTTPClient returns the one client all providers of a run share. It keeps
// at least conns idle connections per host so a pool of that many workers
// reuses connections instead of dialing, and it has no overall timeout:
// streams are bounded by the providers' first-byte and idle timeouts and by
// the runner's per-request deadline instead. It never follows redirects
// (Config refuses them whatever the client, see Config.Post).
func NewHTTPClient(conns int) *http.Client {
	conns = max(conns, 8)
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          conns * 2,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
}
