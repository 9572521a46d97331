package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

// The Files API, as a batch's input and output (wire-formats §5.1): a
// resumable upload in two calls (start, then the bytes with "upload,
// finalize"), and a download of a result file with alt=media. Both live
// beside the API root: /upload/v1beta/files, /download/v1beta/files/….

// hostRoot is the API root moved under prefix ("upload", "download"), as
// Google's SDKs build those URLs: https://host/upload/v1beta.
func (b *Batch) hostRoot(prefix string) (string, error) {
	u, err := url.Parse(b.base)
	if err != nil || u.Host == "" {
		return "", &providers.Error{Class: providers.ClassInvalid, Message: "base URL " + b.BaseURL() + " has no host"}
	}
	u.Path = "/" + prefix + u.Path
	u.RawPath, u.User = "", nil
	return u.String(), nil
}

// sameHost reports whether raw is on the API root's host: the key goes
// nowhere else.
func (b *Batch) sameHost(raw string) bool {
	u, err := url.Parse(raw)
	base, berr := url.Parse(b.base)
	return err == nil && berr == nil && u.Host == base.Host && (u.Scheme == base.Scheme || u.Scheme == "https")
}

// upload stores data as a JSONL file and returns its name ("files/…").
func (b *Batch) upload(ctx context.Context, data []byte, display string) (string, error) {
	root, err := b.hostRoot("upload")
	if err != nil {
		return "", err
	}
	h := header(b.cfg.APIKey)
	h.Set("X-Goog-Upload-Protocol", "resumable")
	h.Set("X-Goog-Upload-Command", "start")
	h.Set("X-Goog-Upload-Header-Content-Length", strconv.Itoa(len(data)))
	h.Set("X-Goog-Upload-Header-Content-Type", "application/jsonl")
	meta, _ := json.Marshal(map[string]any{"file": map[string]string{"display_name": display}})
	resp, err := b.cfg.Do(ctx, http.MethodPost, root+"/files", h, bytes.NewReader(meta))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", b.statusError(resp)
	}
	providers.Drain(resp.Body)
	to := resp.Header.Get("X-Goog-Upload-URL")
	if to == "" || !b.sameHost(to) {
		// Answered, so nothing was created that a rerun should look for.
		return "", &providers.Error{Class: providers.ClassServer, Status: resp.StatusCode,
			Message: "the upload was not given an upload URL on " + b.BaseURL() + " (got " + strconv.Quote(to) + ")"}
	}
	h = header(b.cfg.APIKey)
	h.Set("Content-Type", "application/jsonl")
	h.Set("X-Goog-Upload-Command", "upload, finalize")
	h.Set("X-Goog-Upload-Offset", "0")
	name := ""
	_, err = b.cfg.CallJSON(ctx, providers.Call{Method: http.MethodPost, URL: to, Header: h, Body: data,
		MaxAnswer: 1 << 20, RequestIDHeader: requestIDHeader, StatusError: b.statusError,
		Decode: func(raw []byte) error {
			if name = gjson.GetBytes(raw, "file.name").Str; !strings.HasPrefix(name, "files/") {
				return errNoFileName
			}
			return nil
		}})
	return name, err
}

var errNoFileName = errors.New("no file.name")

// download streams the lines of file ("files/…") to fn.
func (b *Batch) download(ctx context.Context, file string, fn func(line []byte) error) error {
	root, err := b.hostRoot("download")
	if err != nil {
		return err
	}
	id := url.PathEscape(strings.TrimPrefix(file, "files/"))
	h := header(b.cfg.APIKey)
	h.Del("Content-Type")
	return b.cfg.GetLines(ctx, root+"/files/"+id+":download?alt=media", h, b.statusError, fn)
}
