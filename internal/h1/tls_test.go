package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// TestTLS: https is HTTP/1.1 even against a server offering h2, the
// connection is reused, resp.TLS is set; an unknown authority fails with
// the verifier's error, as net/http returns it.
func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the unknown-authority handshake's line
	srv.StartTLS()
	defer srv.Close()
	tr, _, _ := newTransport(t)
	if _, err := get(t, tr, srv.URL); !errors.As(err, new(*tls.CertificateVerificationError)) {
		t.Fatalf("unknown authority: %v", err)
	}
	tr, dials, _ := newTransport(t)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	tr.TLSConfig = &tls.Config{RootCAs: roots}
	for range 3 {
		resp, err := get(t, tr, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "HTTP/1.1" || resp.TLS == nil || resp.TLS.NegotiatedProtocol == "h2" {
			t.Fatalf("server saw %q; TLS %v", b, resp.TLS)
		}
	}
	if dials.Load() != 1 {
		t.Errorf("%d dials, want 1", dials.Load())
	}
}

// pipeTransport dials in-memory pipes served by serve, for synctest.
func pipeTransport(serve func(c net.Conn)) (*Transport, *int) {
	dials := new(int)
	return &Transport{
		Dial: func(context.Context, string, string) (net.Conn, error) {
			*dials++
			c, s := net.Pipe()
			go serve(s)
			return c, nil
		},
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 15 * time.Second,
		MaxIdleConnsPerHost: 2,
		Fallback:            &fallback{},
	}, dials
}

// TestHandshakeTimeout: a server that never answers the ClientHello
// fails the dial after TLSHandshakeTimeout with net/http's words.
func TestHandshakeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		tr, _ := pipeTransport(func(s net.Conn) { <-hold; s.Close() })
		defer close(hold)
		start := time.Now()
		_, err := get(t, tr, "https://api.example.test/v1/models")
		if !errors.Is(err, errHandshakeTimeout) || err.Error() != "h1: TLS handshake timeout" {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d != 15*time.Second {
			t.Errorf("failed after %v", d)
		}
	})
}

// TestIdleTimeout: a pooled connection idle IdleConnTimeout is closed by
// the janitor (the server sees EOF); reuse within it restarts its clock.
func TestIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closed := 0
		tr, dials := pipeTransport(func(s net.Conn) {
			defer s.Close()
			br := bufio.NewReader(s)
			for {
				if _, _, err := readRequest(br); err != nil {
					closed++
					return
				}
				io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		})
		url := "http://api.example.test"
		mustRead(t, tr, url)
		time.Sleep(60 * time.Second)
		mustRead(t, tr, url) // reused: idle 60 s
		time.Sleep(60 * time.Second)
		synctest.Wait()
		if closed != 0 || idleConns(tr, url) != 1 {
			t.Fatalf("closed after 60 s idle (closed %d, idle %d)", closed, idleConns(tr, url))
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if closed != 1 || idleConns(tr, url) != 0 {
			t.Fatalf("not closed after 91 s idle (closed %d, idle %d)", closed, idleConns(tr, url))
		}
		mustRead(t, tr, url)
		if *dials != 2 {
			t.Errorf("%d dials, want 2", *dials)
		}
		tr.CloseIdleConnections()
		synctest.Wait()
		if closed != 2 {
			t.Errorf("CloseIdleConnections left it open")
		}
	})
}

// TestPoolCap: no more than MaxIdleConnsPerHost connections idle; the
// others close when their bodies end.
func TestPoolCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, dials := pipeTransport(func(s net.Conn) {
			defer s.Close()
			br := bufio.NewReader(s)
			for {
				if _, _, err := readRequest(br); err != nil {
					return
				}
				io.WriteString(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		})
		url := "http://api.example.test"
		var bodies []io.ReadCloser
		for range 3 {
			resp, err := get(t, tr, url)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, resp.Body)
		}
		for _, b := range bodies {
			io.ReadAll(b)
			b.Close()
		}
		if *dials != 3 || idleConns(tr, url) != 2 {
			t.Errorf("%d dials, %d idle; want 3, 2", *dials, idleConns(tr, url))
		}
		tr.CloseIdleConnections()
	})
}
