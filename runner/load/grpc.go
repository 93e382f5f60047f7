package load

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/internal/configkey"
)

// The gRPC client keeps one ClientConn and queues at the stream limit: it runs in this process,
// and in the lab's cluster as ghz (--connections=1) in a Job.
func init() {
	Register(Client{Kind: "grpc", Run: runGRPC, InCluster: InCluster{
		Job:  &Job{Name: "ghz", ImageKey: configkey.GHZImage, Args: GHZArgs},
		Read: FromGHZ}})
}

// GRPCResult is the gRPC client's native result.
type GRPCResult struct {
	Target      string           `json:"target"`
	Authority   string           `json:"authority"`
	Call        string           `json:"call"`
	Concurrency int              `json:"concurrency"`
	Connections int              `json:"connections"`
	Dials       int              `json:"dials"`
	Requests    int64            `json:"requests"`
	Errors      int64            `json:"errors"`
	Codes       map[string]int64 `json:"status_codes"`
	RPS         float64          `json:"rps"`
	Latency     h2dial.Latency   `json:"latency"`
}

// runGRPC calls grpc.testing.TestService/UnaryCall from Concurrency goroutines over
// Connections ClientConns (ghz's layout; one by default). A ClientConn keeps one HTTP/2
// connection and queues calls at the server's stream limit instead of dialing more.
func runGRPC(ctx context.Context, s Spec) (*Result, error) {
	conns := max(1, s.Connections)
	var dials atomic.Int64
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			dials.Add(1)
		}
		return c, err
	}
	var ccs []*grpc.ClientConn
	defer func() {
		for _, cc := range ccs {
			cc.Close()
		}
	}()
	for i := 0; i < conns; i++ {
		creds := insecure.NewCredentials()
		if s.TLS {
			creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the local gateway's own certificate
		}
		opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithContextDialer(dialer)}
		if s.Authority != "" {
			opts = append(opts, grpc.WithAuthority(s.Authority))
		}
		cc, err := grpc.NewClient("passthrough:///"+s.Target, opts...)
		if err != nil {
			return nil, fmt.Errorf("grpc client: %w", err)
		}
		ccs = append(ccs, cc)
	}
	deadline := time.Now().Add(s.Duration)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type acc struct {
		h     h2dial.Histogram
		n     int64
		errs  int64
		codes map[string]int64
	}
	accs := make([]*acc, s.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range accs {
		a := &acc{codes: map[string]int64{}}
		accs[i] = a
		client := testpb.NewTestServiceClient(ccs[i%conns])
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &testpb.SimpleRequest{ResponseSize: 1024}
			for runCtx.Err() == nil {
				t0 := time.Now()
				_, err := client.UnaryCall(runCtx, req)
				// gRPC enforces the context's deadline with its own timer, which can fire a hair
				// before the context reports it: a call cut off at the end is not an error.
				if runCtx.Err() != nil || !time.Now().Before(deadline) {
					return
				}
				code := status.Code(err).String()
				a.codes[code]++
				if err != nil {
					a.errs++
					continue
				}
				a.n++
				a.h.Record(time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	nr := &GRPCResult{Target: s.Target, Authority: s.Authority, Call: "grpc.testing.TestService/UnaryCall",
		Concurrency: s.Concurrency, Connections: conns, Dials: int(dials.Load()), Codes: map[string]int64{}}
	var h h2dial.Histogram
	for _, a := range accs {
		h.Merge(&a.h)
		nr.Requests += a.n
		nr.Errors += a.errs
		for k, v := range a.codes {
			nr.Codes[k] += v
		}
	}
	nr.RPS = float64(nr.Requests) / elapsed.Seconds()
	nr.Latency = h.Summary()
	var text strings.Builder
	fmt.Fprintf(&text, "grpc summary\ntarget: %s (authority %s)\ncall: %s\nconcurrency: %d over %d ClientConn(s), %d dial(s)\n",
		nr.Target, nr.Authority, nr.Call, nr.Concurrency, nr.Connections, nr.Dials)
	fmt.Fprintf(&text, "requests: %d  errors: %d  rps: %.1f\np50 %.2fms  p99 %.2fms  max %.2fms\n",
		nr.Requests, nr.Errors, nr.RPS, nr.Latency.P50, nr.Latency.P99, nr.Latency.Max)
	return &Result{Client: "grpc", Requests: nr.Requests, Errors: nr.Errors, RPS: nr.RPS, Latency: nr.Latency,
		ConnectionsOpened: nr.Dials, Native: nr, Text: text.String()}, nil
}
