package mock

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Gemini's Files API as its Batch API uses it (wire-formats §5.1, §5.7):
// a resumable upload (POST /upload/v1beta/files with
// X-Goog-Upload-Command: start answers an upload URL in
// X-Goog-Upload-URL; POST there with "upload, finalize" and the bytes
// answers {"file": File}), a batch created with
// inputConfig.fileName naming it, one {"key", "request"} line per request,
// and its results in output.responsesFile, fetched from GET
// /download/v1beta/files/{id}:download?alt=media, one {"key", "response"}
// or {"key", "error"} line per request that ran.

// geminiFileMaxBytes is the Files API's limit on one file (2 GB).
const geminiFileMaxBytes = 2_000_000_000

// gmUpload is an upload started and not yet finalized.
type gmUpload struct {
	size        int64
	displayName string
}

// handleGMUpload serves POST /upload/v1beta/files: the start of a
// resumable upload, or (with upload_id) its bytes.
func (s *Server) handleGMUpload(w http.ResponseWriter, r *http.Request) {
	d := gemini{}
	reqID, ok := s.batchPrelude(w, r, d, false)
	if !ok {
		return
	}
	if id := r.URL.Query().Get("upload_id"); id != "" {
		s.gmUploadBytes(w, r, reqID, id)
		return
	}
	if r.Header.Get("X-Goog-Upload-Protocol") != "resumable" || r.Header.Get("X-Goog-Upload-Command") != "start" {
		s.badRequest(w, d, reqID, errInvalid("", "this mock takes resumable uploads only (X-Goog-Upload-Protocol: resumable, X-Goog-Upload-Command: start)"))
		return
	}
	size, err := strconv.ParseInt(r.Header.Get("X-Goog-Upload-Header-Content-Length"), 10, 64)
	_, maxBytes := s.batchLimits(geminiBatchMaxItems, geminiFileMaxBytes)
	switch {
	case err != nil || size < 0:
		s.badRequest(w, d, reqID, errInvalid("", "X-Goog-Upload-Header-Content-Length must give the file's size"))
		return
	case size > maxBytes:
		s.badRequest(w, d, reqID, errBatchTooLarge("the file is "+strconv.FormatInt(size, 10)+" bytes, more than the "+strconv.FormatInt(maxBytes, 10)+" a file may hold"))
		return
	}
	var meta struct {
		File struct {
			DisplayName string `json:"display_name"`
		} `json:"file"`
	}
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)); len(b) > 0 {
		if err := json.Unmarshal(b, &meta); err != nil {
			s.badRequest(w, d, reqID, errInvalid("", "Invalid JSON payload received. "+err.Error()))
			return
		}
	}
	s.batches.mu.Lock()
	id := s.batches.nextID("up")
	if s.batches.uploads == nil {
		s.batches.uploads = make(map[string]gmUpload)
	}
	s.batches.uploads[id] = gmUpload{size: size, displayName: meta.File.DisplayName}
	s.batches.mu.Unlock()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	w.Header().Set("X-Goog-Upload-URL", scheme+"://"+r.Host+r.URL.Path+"?upload_id="+id)
	w.Header().Set("X-Goog-Upload-Status", "active")
	w.WriteHeader(http.StatusOK)
}

// gmUploadBytes takes the bytes of upload id, all in one call, and stores
// the file.
func (s *Server) gmUploadBytes(w http.ResponseWriter, r *http.Request, reqID, id string) {
	d := gemini{}
	s.batches.mu.Lock()
	up, ok := s.batches.uploads[id]
	s.batches.mu.Unlock()
	switch {
	case !ok:
		s.fail(w, d, reqID, errNoSuch("upload", id))
		return
	case r.Header.Get("X-Goog-Upload-Command") != "upload, finalize" || r.Header.Get("X-Goog-Upload-Offset") != "0":
		s.badRequest(w, d, reqID, errInvalid("", "this mock takes a file's bytes in one call: X-Goog-Upload-Command: upload, finalize at offset 0"))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, up.size))
	if err != nil || int64(len(data)) != up.size {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) || err == nil {
			s.badRequest(w, d, reqID, errInvalid("", "the upload's bytes do not match its announced size"))
		}
		return
	}
	s.batches.mu.Lock()
	delete(s.batches.uploads, id)
	name := s.batches.nextID("files/")
	s.batches.putGMFile(name, data)
	s.batches.mu.Unlock()
	s.bump(&s.stats.FilesUploaded)
	b := []byte(`{"file":{"name":`)
	b = appendString(b, name)
	b = append(b, `,"displayName":`...)
	b = appendString(b, up.displayName)
	b = append(b, `,"mimeType":"application/jsonl","sizeBytes":"`...)
	b = appendInt(b, len(data))
	b = append(b, `","state":"ACTIVE","source":"UPLOADED"}}`...)
	w.Header().Set("X-Goog-Upload-Status", "final")
	writeJSON(w, b)
}

// putGMFile stores a Gemini file. Requires bs.mu.
func (bs *batchStore) putGMFile(name string, data []byte) {
	if bs.gmFiles == nil {
		bs.gmFiles = make(map[string][]byte)
	}
	bs.gmFiles[name] = data
}

// handleGMDownload serves GET /download/v1beta/files/{call}, call being
// "{id}:download" with alt=media: the file's bytes.
func (s *Server) handleGMDownload(w http.ResponseWriter, r *http.Request) {
	d := gemini{}
	reqID, ok := s.batchPrelude(w, r, d, false)
	if !ok {
		return
	}
	id, method, _ := strings.Cut(r.PathValue("call"), ":")
	if method != "download" || r.URL.Query().Get("alt") != "media" {
		s.badRequest(w, d, reqID, errInvalid("", "download a file with files/{id}:download?alt=media"))
		return
	}
	s.batches.mu.Lock()
	data, ok := s.batches.gmFiles["files/"+id]
	s.batches.mu.Unlock()
	if !ok {
		s.bump(&s.stats.NotFound)
		s.fail(w, d, reqID, errNoSuch("file", "files/"+id))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(data)
}

// gmFileItems reads a batch's input file: one {"key", "request"} line per
// request.
func gmFileItems(data []byte, maxItems int) ([]bitem, *apiError) {
	var items []bitem
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var l struct {
			Key     string          `json:"key"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil || len(l.Request) == 0 || l.Request[0] != '{' {
			return nil, errInvalid("", "line "+strconv.Itoa(i+1)+" of the input file is not a {\"key\", \"request\"} object")
		}
		items = append(items, bitem{customID: l.Key, body: l.Request, h: bodyHash('g', l.Request)})
	}
	if len(items) > maxItems {
		return nil, errBatchTooLarge("a batch holds at most " + strconv.Itoa(maxItems) + " requests, got " + strconv.Itoa(len(items)))
	}
	return items, nil
}

// writeGMOutputFile writes the responses file of a batch whose input was
// a file: a line per request that ran, in the shuffled order. Requires
// bs.mu.
func (s *Server) writeGMOutputFile(m *mbatch) {
	var out []byte
	for _, i := range m.order {
		res := &m.results[i]
		if res.kind != itemSucceeded && res.kind != itemErrored {
			continue
		}
		out = append(out, `{"key":`...)
		out = appendString(out, m.items[i].customID)
		if res.kind == itemSucceeded {
			out = append(out, `,"response":`...)
			out = append(out, res.body...)
			out = append(out, '}')
		} else {
			out = append(out, ',')
			out = append(out, res.body[1:]...) // {"error": Status}: its members
		}
		out = append(out, '\n')
	}
	m.outFile = s.batches.nextID("files/")
	s.batches.putGMFile(m.outFile, out)
}
