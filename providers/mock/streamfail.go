package mock

import "net/http"

// streamFails answers a streamed request with the bare 500 of a gateway
// that cannot stream (Config.StreamFailure): {"status":"failure"}, in no
// dialect's error shape. It reports whether it answered.
func (s *Server) streamFails(w http.ResponseWriter, req *request) bool {
	if !s.cfg.StreamFailure || !req.stream {
		return false
	}
	s.bump(&s.stats.ServerErrors)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	w.Write([]byte(`{"status":"failure"}`))
	return true
}
