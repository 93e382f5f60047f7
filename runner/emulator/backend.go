package emulator

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/mccutchen/go-httpbin/v2/httpbin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
)

// Backends are the lab's upstreams on loopback: go-httpbin (the same library the lab's
// httpbin image runs) over HTTP/1.1, in as many replicas as the lab runs, each on its own
// "node" behind that node's ztunnel, and a gRPC server with server reflection standing in for
// grpcbin (grpc.testing.TestService, so grpcurl and ghz can call it by name).
type Backends struct {
	HTTPBin  []string // host:port of each replica
	GRPC     string   // host:port
	Ztunnels []*Ztunnel
	httpSrv  []*http.Server
	grpcSrv  *grpc.Server
}

// StartBackends starts the backends; replica i of httpbin listens on node i's address.
func StartBackends(replicas int) (*Backends, error) {
	b := &Backends{}
	hb := httpbin.New(httpbin.WithMaxBodySize(20<<20), httpbin.WithMaxDuration(10*time.Second))
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
		b.httpSrv = append(b.httpSrv, srv)
		b.HTTPBin = append(b.HTTPBin, hl.Addr().String())
		go func() {
			if err := srv.Serve(z.wrap(hl)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				_ = err // the listener is ours; Serve only fails when it is closed
			}
		}()
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Close()
		return nil, err
	}
	b.GRPC = gl.Addr().String()
	b.grpcSrv = grpc.NewServer()
	testpb.RegisterTestServiceServer(b.grpcSrv, testService{})
	healthpb.RegisterHealthServer(b.grpcSrv, health.NewServer())
	reflection.Register(b.grpcSrv)
	go func() { _ = b.grpcSrv.Serve(gl) }()
	return b, nil
}

// Close stops the backends.
func (b *Backends) Close() {
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

// testService answers UnaryCall with a payload of the requested size.
type testService struct {
	testpb.UnimplementedTestServiceServer
}

func (testService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (testService) UnaryCall(_ context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	size := min(int(in.GetResponseSize()), 4<<20)
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, size)}}, nil
}
