// Package grpclab is the lab's gRPC backend and gRPC load client, one library for both targets:
// the local pool's backend and the `grpc` client run it in process, and the lab's own image
// (h2dial/Dockerfile, built for the machine's own architecture) runs it in the cluster as the
// grpcbin Deployment and, by exec in the h2dial pod, as the client. Public gRPC load images
// (ghz) and backends (moul/grpcbin) are published for amd64 only, which an arm64 laptop's k3d
// cannot run.
package grpclab

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
)

// The methods the client calls, by mode: grpc-go's interop TestService, which grpcurl and ghz
// can call by name through the server's reflection.
const (
	Call             = "grpc.testing.TestService/UnaryCall"
	CallServerStream = "grpc.testing.TestService/StreamingOutputCall"
	CallBidi         = "grpc.testing.TestService/FullDuplexCall"
)

// MaxResponseSize bounds the payload a request may ask for.
const MaxResponseSize = 4 << 20

// NewServer is the backend: grpc.testing.TestService (EmptyCall, UnaryCall answering with a
// payload of the requested size, StreamingOutputCall and FullDuplexCall answering with one
// message per ResponseParameters at its interval: streamserver.go), the standard health service
// and server reflection; opts are grpc-go's server options (a test's connection age, say).
func NewServer(opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(s, testService{})
	healthpb.RegisterHealthServer(s, health.NewServer())
	reflection.Register(s)
	return s
}

// Serve runs the backend on l until ctx ends, then stops it gracefully.
func Serve(ctx context.Context, l net.Listener) error {
	s := NewServer()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			s.GracefulStop()
		case <-done:
		}
	}()
	err := s.Serve(l)
	close(done)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

type testService struct {
	testpb.UnimplementedTestServiceServer
}

func (testService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (testService) UnaryCall(_ context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	size := min(max(int(in.GetResponseSize()), 0), MaxResponseSize)
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, size)}}, nil
}
