package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"golang.org/x/net/http2"
)

// body is what the reference server answers: small, so the clients' per-request work, not
// bytes, is what the client benchmark compares.
var body = []byte(`{"ok":true,"what":"igwlab bench reference h2c server"}` + "\n")

// serveH2C serves prior-knowledge HTTP/2 on ln until ctx ends: every connection goes straight to
// x/net/http2's server with a handler that writes a fixed body.
func serveH2C(ctx context.Context, ln net.Listener) error {
	h2 := &http2.Server{MaxConcurrentStreams: 1000}
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go h2.ServeConn(c, &http2.ServeConnOpts{Context: ctx, Handler: h})
	}
}

// runServer is the hidden `_server` subcommand: it listens on a loopback port, prints the
// address on its first line, and serves until its stdin closes (the parent exits or kills it).
func runServer(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, ln.Addr().String())
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	return serveH2C(ctx, ln)
}
