package gemini

import (
	"context"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/providers"
)

// Embeddings (wire-formats §5.8): POST models/{model}:embedContent for a
// body with one content, models/{model}:batchEmbedContents for a body
// with requests (many inputs). Never streamed. The answer is kept as sent
// ({"embedding":{"values":[…]}} or {"embeddings":[…]}); it usually has
// no usage, and the runner then estimates the input tokens.

// sendEmbed makes one attempt of an embeddings request.
func (p *Provider) sendEmbed(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	body, model, err := prepareEmbed(req.Body)
	if err != nil {
		return nil, &providers.Error{Class: providers.ClassInvalid, Message: "request body: " + err.Error(), Err: err}
	}
	w := p.wire
	w.URL = p.base + "/" + model + ":embedContent"
	if providers.GeminiEmbedMany(body) {
		w.URL = p.base + "/" + model + ":batchEmbedContents"
	}
	w.ParsePlain = p.parseEmbed
	w.ReadStream = p.readEmbedStream
	resp, err := p.cfg.Exchange(ctx, &w, body, providers.EmbeddingsBound(req))
	if resp != nil && resp.Model == "" {
		resp.Model = strings.TrimPrefix(model, "models/")
	}
	return resp, err
}

// prepareEmbed is prepare for an embeddings body, which also gives each of
// many requests the model (batchEmbedContents wants it in every one).
func prepareEmbed(in []byte) ([]byte, string, error) {
	out, model, err := prepare(in)
	if err != nil {
		return nil, "", err
	}
	n := len(gjson.GetBytes(out, "requests").Array())
	for i := 0; i < n && err == nil; i++ {
		if p := "requests." + strconv.Itoa(i) + ".model"; !gjson.GetBytes(out, p).Exists() {
			out, err = sjson.SetBytes(out, p, model)
		}
	}
	return out, model, err
}

// parseEmbed reads an embeddings answer; Text stays empty. Usage is
// usageMetadata where a newer API version sends it, else none.
func (p *Provider) parseEmbed(b []byte, out *providers.Response) error {
	root := gjson.ParseBytes(b)
	if e := root.Get("error"); e.IsObject() && !root.Get("embedding").Exists() && !root.Get("embeddings").Exists() {
		return providers.AnswerError(root, b, out, p.cfg.Secret(), fillError)
	}
	out.Body = b
	out.Usage = usage(root.Get("usageMetadata"))
	return nil
}

// readEmbedStream reads an embeddings answer that came with a content type
// other than JSON (a proxy's text/plain): one JSON body all the same.
func (p *Provider) readEmbedStream(ctx context.Context, r io.Reader, out *providers.Response, _ time.Time) error {
	return providers.ReadWholeJSON(ctx, r, out, p.cfg.Secret(), p.parseEmbed)
}
