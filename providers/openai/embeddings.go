package openai

import (
	"context"
	"io"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/providers"
)

// Embeddings (wire-formats §8): POST /embeddings, never streamed. The
// answer is kept as the provider sent it (floats or base64); usage has
// input tokens only.

// prepareEmbeddings removes stream flags an input may carry: the endpoint
// has no streaming and rejects them. The caller's body is never modified.
func prepareEmbeddings(in []byte) ([]byte, error) { return dropStream(in) }

// dropStream removes the stream and stream_options members, copying in
// only when it has either.
func dropStream(in []byte) ([]byte, error) {
	out := in
	var err error
	for _, k := range [...]string{"stream", "stream_options"} {
		if err == nil && gjson.GetBytes(out, k).Exists() {
			out, err = sjson.DeleteBytes(out, k)
		}
	}
	return out, err
}

// parseEmbeddings reads an embeddings answer; Text stays empty.
func (p *Provider) parseEmbeddings(b []byte, out *providers.Response) error {
	_, err := p.parseAnswer(b, out, "data")
	return err
}

// readEmbeddingsStream reads an embeddings answer that came with a content
// type other than JSON (a local server's text/plain): it is one JSON body
// all the same.
func (p *Provider) readEmbeddingsStream(ctx context.Context, r io.Reader, out *providers.Response, _ time.Time) error {
	return providers.ReadWholeJSON(ctx, r, out, p.cfg.Secret(), p.parseEmbeddings)
}
