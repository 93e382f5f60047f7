package grpclab

import (
	"context"
	"crypto/tls"
	"errors"
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
)

// Options is one client run.
type Options struct {
	Target      string // host:port
	Authority   string // the :authority the gateway routes on ("" = the target)
	Concurrency int    // calls in flight, each from its own goroutine in a closed loop
	Connections int    // ClientConns the calls share round robin (0 = 1)
	Duration    time.Duration
	TLS         bool // HTTP/2 over TLS, the server's certificate not verified
	AllowRemote bool // dial targets off 127.0.0.0/8
}

// Result is what the client saw.
type Result struct {
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

// Validate says what is wrong with o.
func (o Options) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.Target); err != nil {
		errs = append(errs, fmt.Errorf("target %q: want host:port", o.Target))
	}
	if o.Concurrency < 1 || o.Concurrency > 100000 {
		errs = append(errs, fmt.Errorf("concurrency %d: want 1 to 100000", o.Concurrency))
	}
	if o.Connections < 0 || o.Connections > 1000 {
		errs = append(errs, fmt.Errorf("connections %d: want 0 to 1000", o.Connections))
	}
	if o.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %s: want more than 0", o.Duration))
	}
	return errors.Join(errs...)
}

// Run calls UnaryCall (a 1 KiB answer) from Concurrency goroutines over Connections
// ClientConns for Duration. A ClientConn keeps one HTTP/2 connection and queues calls at the
// server's stream limit instead of dialing more (grpc-go's http2Client), the layout of ghz's
// --connections and of a service's gRPC pool.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !o.AllowRemote {
		if err := h2dial.CheckLoopback(ctx, o.Target); err != nil {
			return nil, err
		}
	}
	conns := max(1, o.Connections)
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
	for range conns {
		creds := insecure.NewCredentials()
		if o.TLS {
			creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the lab's gateway certificate, self-signed
		}
		opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithContextDialer(dialer)}
		if o.Authority != "" {
			opts = append(opts, grpc.WithAuthority(o.Authority))
		}
		cc, err := grpc.NewClient("passthrough:///"+o.Target, opts...)
		if err != nil {
			return nil, fmt.Errorf("grpc client: %w", err)
		}
		ccs = append(ccs, cc)
	}
	deadline := time.Now().Add(o.Duration)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type acc struct {
		h     h2dial.Histogram
		n     int64
		errs  int64
		codes map[string]int64
	}
	accs := make([]*acc, o.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range accs {
		a := &acc{codes: map[string]int64{}}
		accs[i] = a
		client := testpb.NewTestServiceClient(ccs[i%conns])
		wg.Go(func() {
			req := &testpb.SimpleRequest{ResponseSize: 1024}
			for runCtx.Err() == nil {
				t0 := time.Now()
				_, err := client.UnaryCall(runCtx, req)
				// gRPC enforces the context's deadline with its own timer, which can fire a hair
				// before the context reports it: a call cut off at the end is not an error.
				if runCtx.Err() != nil || !time.Now().Before(deadline) {
					return
				}
				a.codes[status.Code(err).String()]++
				if err != nil {
					a.errs++
					continue
				}
				a.n++
				a.h.Record(time.Since(t0))
			}
		})
	}
	wg.Wait() // at the deadline, or early when ctx ends: what ran until then is the result
	elapsed := time.Since(start)
	r := &Result{Target: o.Target, Authority: o.Authority, Call: Call, Concurrency: o.Concurrency,
		Connections: conns, Dials: int(dials.Load()), Codes: map[string]int64{}}
	var h h2dial.Histogram
	for _, a := range accs {
		h.Merge(&a.h)
		r.Requests += a.n
		r.Errors += a.errs
		for k, v := range a.codes {
			r.Codes[k] += v
		}
	}
	r.RPS = float64(r.Requests) / elapsed.Seconds()
	r.Latency = h.Summary()
	return r, nil
}

// Text is the run's summary as a user reads it.
func (r *Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "grpc summary\ntarget: %s (authority %s)\ncall: %s\nconcurrency: %d over %d ClientConn(s), %d dial(s)\n",
		r.Target, r.Authority, r.Call, r.Concurrency, r.Connections, r.Dials)
	fmt.Fprintf(&b, "requests: %d  errors: %d  rps: %.1f\np50 %.2fms  p99 %.2fms  max %.2fms\n",
		r.Requests, r.Errors, r.RPS, r.Latency.P50, r.Latency.P99, r.Latency.Max)
	return b.String()
}
