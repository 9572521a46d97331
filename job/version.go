package job

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
)

// BuildInfo is what the Go toolchain recorded about this binary.
type BuildInfo struct {
	// Version is the module version ("v1.4.0" when built by go install
	// module@version), or "devel" for a build in a checkout.
	Version string
	// Revision, Time and Modified describe the VCS checkout it was built
	// from, when the toolchain recorded one.
	Revision, Time string
	Modified       bool
	GoVersion      string
}

// Build reads the binary's build information (debug.ReadBuildInfo).
func Build() BuildInfo {
	b := BuildInfo{Version: "devel"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = bi.GoVersion
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// Short is the version for the User-Agent: the module version, or
// devel-<revision> for a checkout build.
func (b BuildInfo) Short() string {
	if b.Version == "devel" && b.Revision != "" {
		return "devel-" + b.Revision[:min(len(b.Revision), 12)]
	}
	return b.Version
}

// String is the version as `llmrun version` prints it.
func (b BuildInfo) String() string {
	var s strings.Builder
	s.WriteString(b.Version)
	if b.Revision != "" {
		fmt.Fprintf(&s, " (revision %s", b.Revision)
		if b.Time != "" {
			fmt.Fprintf(&s, ", %s", b.Time)
		}
		if b.Modified {
			s.WriteString(", modified")
		}
		s.WriteString(")")
	}
	if b.GoVersion != "" {
		fmt.Fprintf(&s, " %s", b.GoVersion)
	}
	return s.String()
}

// UserAgent is the User-Agent of every request llmrun sends.
func UserAgent() string { return "llmrun/" + Build().Short() }

// ParseHeaders parses --header values ("Name: value") into a header.
// Values may be secrets, so errors name the header, never its value.
func ParseHeaders(vals []string) (http.Header, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	h := make(http.Header, len(vals))
	for i, v := range vals {
		name, value, ok := strings.Cut(v, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || !validHeaderName(name) {
			return nil, usagef("--header #%d: want 'Name: value', such as 'HTTP-Referer: https://example.com'", i+1)
		}
		if !validHeaderValue(value) {
			return nil, usagef("--header %s: the value holds a character a header cannot carry", name)
		}
		h.Add(name, value)
	}
	return h, nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s holds no control character but tab
// (RFC 9110 5.5): a CR or LF would split the request.
func validHeaderValue(s string) bool {
	for _, r := range s {
		if (r < ' ' && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}
