package checkpoint

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
)

// withoutUserinfo returns s without the user and password of a URL in it
// (http://user:pass@host/v1 → http://host/v1), and s itself if it is not a
// URL with credentials. A --base-url or --redis URL may carry them; nothing
// the checkpoint writes does.
func withoutUserinfo(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil || u.Host == "" {
		return s
	}
	u.User = nil
	return u.String()
}

// scrubJSON returns v with withoutUserinfo applied to every string in it.
// Values without a URL with credentials are returned as they are.
func scrubJSON(v json.RawMessage) json.RawMessage {
	if !bytes.Contains(v, []byte("://")) || !bytes.Contains(v, []byte("@")) {
		return v
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil {
		return v
	}
	changed := false
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			if s := withoutUserinfo(t); s != t {
				changed = true
				return s
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		}
		return x
	}
	x = walk(x)
	if !changed {
		return v
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(x) != nil {
		return v
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
