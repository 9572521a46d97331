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
	io.infof("mock: serving on http://%s (OpenAI base http://%s/v1)", ln.Addr(), ln.Addr())
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
