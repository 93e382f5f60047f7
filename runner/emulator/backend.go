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
// httpbin image runs) over HTTP/1.1, and a gRPC server with server reflection standing in for
// grpcbin (grpc.testing.TestService, so grpcurl and ghz can call it by name).
type Backends struct {
	HTTPBin string // host:port
	GRPC    string // host:port
	httpSrv *http.Server
	grpcSrv *grpc.Server
}

// StartBackends starts both backends on 127.0.0.1.
func StartBackends() (*Backends, error) {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		hl.Close()
		return nil, err
	}
	b := &Backends{HTTPBin: hl.Addr().String(), GRPC: gl.Addr().String()}
	hb := httpbin.New(httpbin.WithMaxBodySize(20<<20), httpbin.WithMaxDuration(10*time.Second))
	b.httpSrv = &http.Server{Handler: hb, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := b.httpSrv.Serve(hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener is ours; Serve only fails when it is closed
		}
	}()
	b.grpcSrv = grpc.NewServer()
	testpb.RegisterTestServiceServer(b.grpcSrv, testService{})
	healthpb.RegisterHealthServer(b.grpcSrv, health.NewServer())
	reflection.Register(b.grpcSrv)
	go func() { _ = b.grpcSrv.Serve(gl) }()
	return b, nil
}

// Close stops both backends.
func (b *Backends) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = b.httpSrv.Shutdown(ctx)
	b.grpcSrv.Stop()
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
