package emulator

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"golang.org/x/net/http2"
)

// A ztunnel's inbound side: HBONE to a pod on its node arrives at the pod's port 15008, which
// the node's ztunnel takes (src/proxy/inbound.rs); each CONNECT stream is one connection to the
// pod at the address it names. Its bytes are relayed on the runtime like the outbound side's,
// each inbound HBONE connection its own task (its frames are read and decrypted by the one
// task that drives it).

// listenInbound opens the node's HBONE listener for its pods at backends.
func (o *ztProxy) listenInbound(backends []string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(o.z.ip, "0"))
	if err != nil {
		return err
	}
	o.inbound, o.backends = ln, backends
	go acceptEach(ln, o.serveInbound)
	return nil
}

// inboundAddr is where HBONE to the node's pods goes.
func (o *ztProxy) inboundAddr() string { return o.inbound.Addr().String() }

// serveInbound serves one inbound HBONE connection: the connection itself is the task its
// tunnels' bytes are booked on.
func (o *ztProxy) serveInbound(c net.Conn) {
	task := &ztHBONE{nc: c}
	o.book(task, o.cfg.Cost.Handshake)
	srv := &http2.Server{}
	srv.ServeConn(c, &http2.ServeConnOpts{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		o.tunnelIn(task, rw, r)
	})})
	o.mu.Lock()
	o.rt.Forget(task)
	o.mu.Unlock()
}

// tunnelIn connects one CONNECT stream to the pod it names, if the pod is on this node.
func (o *ztProxy) tunnelIn(task *ztHBONE, rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(rw, "HBONE takes CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	if !slices.Contains(o.backends, r.Host) {
		http.Error(rw, "no such pod on this node: "+r.Host, http.StatusServiceUnavailable)
		return
	}
	o.book(task, o.cfg.Cost.PerTunnel)
	var d net.Dialer
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	up, err := d.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		http.Error(rw, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer up.Close()
	rw.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(rw)
	if rc.Flush() != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		// The pod's listener counts the bytes as the destination's (ztListener).
		o.relay(task, up, r.Body, nil) // the tunnel's bytes to the pod
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		close(done)
	}()
	o.relay(task, flushWriter{rw, rc}, up, nil) // the pod's bytes back
	<-done
}

// flushWriter writes a response and flushes it at once, as ztunnel forwards each read.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}
