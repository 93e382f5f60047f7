package grpclab

import (
	"context"
	"sync"
	"time"

	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/igwlab/igwlab/h2dial"
)

// runUnary calls UnaryCall (a 1 KiB answer) from Concurrency goroutines over the ClientConns,
// round robin, until the deadline. A ClientConn on pick_first keeps one HTTP/2 connection and
// queues calls at the server's stream limit instead of dialing more (grpc-go's http2Client),
// the layout of ghz's --connections and of a service's gRPC pool.
func runUnary(ctx context.Context, deadline time.Time, o Options, cs *clientConns, r *Result) {
	type acc struct {
		h     h2dial.Histogram
		n     int64
		errs  int64
		codes map[string]int64
	}
	accs := make([]*acc, o.Concurrency)
	var wg sync.WaitGroup
	for i := range accs {
		a := &acc{codes: map[string]int64{}}
		accs[i] = a
		client := testpb.NewTestServiceClient(cs.ccs[i%len(cs.ccs)])
		wg.Go(func() {
			req := &testpb.SimpleRequest{ResponseSize: 1024}
			for ctx.Err() == nil {
				t0 := time.Now()
				_, err := client.UnaryCall(ctx, req)
				// gRPC enforces the context's deadline with its own timer, which can fire a hair
				// before the context reports it: a call cut off at the end is not an error.
				if ctx.Err() != nil || !time.Now().Before(deadline) {
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
	wg.Wait()
	var h h2dial.Histogram
	for _, a := range accs {
		h.Merge(&a.h)
		r.Requests += a.n
		r.Errors += a.errs
		for k, v := range a.codes {
			r.Codes[k] += v
		}
	}
	r.Latency = h.Summary()
}
