package load

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/igwlab/igwlab/internal/testutil"
)

func h2cTarget(t *testing.T) string {
	t.Helper()
	srv := testutil.H2C(t, 0, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestFortioIsAFixedPool: fortio's -c goroutines each own one client, hence one connection,
// whatever the server allows.
func TestFortioIsAFixedPool(t *testing.T) {
	r, err := Run(context.Background(), Spec{Kind: "fortio", Concurrency: 3, QPS: 300, Target: h2cTarget(t), Path: "/", Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.ConnectionsOpened != 3 || r.Requests < 100 || r.Errors != 0 {
		t.Fatalf("fortio: %d connections, %d requests, %d errors", r.ConnectionsOpened, r.Requests, r.Errors)
	}
	var sum int64
	for _, n := range r.PerConnection {
		sum += n
	}
	if sum < r.Requests {
		t.Fatalf("per-connection counts %v miss requests (%d)", r.PerConnection, r.Requests)
	}
}

type echo struct {
	testpb.UnimplementedTestServiceServer
}

func (echo) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{}, nil
}

// TestGRPCUsesOneConnection: 50 concurrent calls over one ClientConn share one connection.
func TestGRPCUsesOneConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, echo{})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	r, err := Run(context.Background(), Spec{Kind: "grpc", Concurrency: 50, Connections: 1, Target: ln.Addr().String(), Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.ConnectionsOpened != 1 || r.Requests == 0 || r.Errors != 0 {
		t.Fatalf("grpc: %d dials, %d requests, %d errors", r.ConnectionsOpened, r.Requests, r.Errors)
	}
}

func TestSpecErrors(t *testing.T) {
	for _, s := range []Spec{
		{Kind: "h2dial", Target: "127.0.0.1:1"},
		{Kind: "wrk", Target: "127.0.0.1:1", Duration: time.Second},
		{Kind: "fortio", Target: "10.1.2.3:80", Duration: time.Second},
		{Kind: "grpc", Target: "nohostport", Duration: time.Second},
	} {
		if _, err := Run(context.Background(), s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}
