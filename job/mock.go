package job

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// ServeMock serves the built-in mock provider configured by cfg on addr
// until ctx ends.
func ServeMock(ctx context.Context, io *IO, addr string, cfg mock.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	io.infof("%s", mockBaseURLs(ln.Addr().String()))
	srv := &http.Server{Handler: mock.New(cfg), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// mockBaseURLs is the mock's start line: the base URL of every dialect,
// as each provider's --base-url (or environment variable) takes it.
func mockBaseURLs(addr string) string {
	u := "http://" + addr
	return "mock: serving on " + u + "; base URLs: OpenAI (Chat Completions, Responses, embeddings) " + u + "/v1" +
		", Anthropic " + u + ", Azure OpenAI " + u + "/openai, Gemini " + u + "/v1beta"
}
