package emulator

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/mccutchen/go-httpbin/v2/httpbin"
	"google.golang.org/grpc"

	"github.com/igwlab/igwlab/grpclab"
)

// Backends are the lab's upstreams on loopback: go-httpbin (the same library the lab's
// httpbin image runs) over HTTP/1.1, in as many replicas as the lab runs, each on its own
// "node" behind that node's ztunnel, and the lab's gRPC backend (grpclab, the server its
// grpcbin Deployment runs).
type Backends struct {
	HTTPBin []string // host:port of each replica
	// mem is each replica's in-process listener by its address (memconn.go): the gateway
	// pods' upstream connections.
	mem map[string]*memListener
	// local is each replica in the process by its address (upstream_local.go): how the pods
	// reach it when no upstream round trip is set.
	local    map[string]*localReplica
	GRPC     string // host:port
	Ztunnels []*Ztunnel
	httpSrv  []*http.Server
	grpcSrv  *grpc.Server
}

// MaxStreamDuration is the longest request go-httpbin serves (its -max-duration): /sse and
// /delay up to ten minutes, so that a long-lived event stream outlives a scenario's window.
const MaxStreamDuration = 10 * time.Minute

// StartBackends starts the backends; replica i of httpbin listens on node i's address.
func StartBackends(replicas int) (*Backends, error) {
	b := &Backends{mem: map[string]*memListener{}, local: map[string]*localReplica{}}
	// Ten minutes, as the lab's httpbin allows: an event stream (/sse) outlives a window.
	hb := httpbin.New(httpbin.WithMaxBodySize(20<<20), httpbin.WithMaxDuration(MaxStreamDuration))
	for i := 0; i < replicas; i++ {
		ip := podIP(2, i)
		z, err := newZtunnel(ztunnelName(i), ip)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Ztunnels = append(b.Ztunnels, z)
		hl, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			b.Close()
			return nil, err
		}
		srv := &http.Server{Handler: hb, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		// HTTP/1.1 as the gateway's upstream speaks it, and HTTP/2 with prior knowledge for
		// the mesh clients that reach a replica through ztunnel alone (the 23-zt scenarios,
		// local only): go-httpbin's own server takes HTTP/1.1 only.
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
		b.httpSrv = append(b.httpSrv, srv)
		b.HTTPBin = append(b.HTTPBin, hl.Addr().String())
		ml := newMemListener(hl.Addr())
		b.mem[hl.Addr().String()] = ml
		b.local[hl.Addr().String()] = &localReplica{handler: hb, z: z, addr: hl.Addr()}
		for _, l := range []net.Listener{hl, ml} {
			go func() {
				if err := srv.Serve(z.wrap(l)); err != nil && !errors.Is(err, http.ErrServerClosed) {
					_ = err // the listener is ours; Serve only fails when it is closed
				}
			}()
		}
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Close()
		return nil, err
	}
	b.GRPC = gl.Addr().String()
	b.grpcSrv = grpclab.NewServer()
	go func() { _ = b.grpcSrv.Serve(gl) }()
	return b, nil
}

// localReplica is the replica at addr in the process, nil for any other address.
func (b *Backends) localReplica(addr string) *localReplica { return b.local[addr] }

// Close stops the backends.
func (b *Backends) Close() {
	for _, r := range b.local {
		r.closed.Store(true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range b.httpSrv {
		_ = s.Shutdown(ctx)
	}
	for _, z := range b.Ztunnels {
		z.close()
	}
	if b.grpcSrv != nil {
		b.grpcSrv.Stop()
	}
}
