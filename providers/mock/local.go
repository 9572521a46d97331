package mock

import "github.com/tidwall/sjson"

// noUsage is a dialect as a local server speaks it when it reports no
// usage (Config.NoUsage): no usage member in a plain answer, no usage
// chunk in a stream whatever stream_options asks.
type noUsage struct{ dialect }

func (n noUsage) parse(body []byte) (*request, *apiError) {
	req, err := n.dialect.parse(body)
	if req != nil {
		req.includeUsage = false
	}
	return req, err
}

func (n noUsage) plainBody(c *completion) []byte {
	b := n.dialect.plainBody(c)
	if out, err := sjson.DeleteBytes(b, "usage"); err == nil {
		return out
	}
	return b
}

// local is d as this server speaks it: without usage under NoUsage.
func (s *Server) local(d dialect) dialect {
	if s.cfg.NoUsage {
		return noUsage{d}
	}
	return d
}
