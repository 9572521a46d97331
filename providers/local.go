package providers

import (
	"net/netip"
	"net/url"
	"strings"
)

// LocalURL reports whether rawURL points at this machine or a private
// network: a loopback, private (RFC 1918, fc00::/7) or link-local IP
// address, or localhost. Such a server is one the user runs (vLLM,
// Ollama, llama.cpp), which usually wants no API key. Other host names
// are not resolved: they count as public.
func LocalURL(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
}
