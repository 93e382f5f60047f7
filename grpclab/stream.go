package grpclab

import (
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/igwlab/igwlab/h2dial"
)

// The stream modes: each of Concurrency goroutines holds one long-lived stream and opens the
// next as soon as one ends, as a client of a watch or a feed does. A stream the gateway ends
// (max_stream_duration resets it: status INTERNAL, "stream terminated by RST_STREAM with error
// code: NO_ERROR") is opened again on whatever connection its ClientConn picks: the same one
// unless that connection received a GOAWAY, after which grpc-go sends new streams on a new
// connection while the old one keeps the streams it has until they end (http2_client.go
// handleGoAway).

// reopenPause is how long a goroutine waits after a stream failed to open before it tries
// again: without it a gateway that is down would be asked thousands of times a second.
const reopenPause = 20 * time.Millisecond

type streamAcc struct {
	// deadline is the window's end: gRPC enforces it with its own timer, which can fire a hair
	// before the context reports it, so a stream cut off then did not end early.
	deadline time.Time
	h        h2dial.Histogram
	msgs     int64
	opened   int64
	failed   int64
	codes    map[string]int64
	endedBy  map[string]int64
}

func runStreams(ctx context.Context, deadline time.Time, o Options, cs *clientConns, r *Result) {
	accs := make([]*streamAcc, o.Concurrency)
	interval := time.Duration(float64(time.Second) / o.Rate)
	var wg sync.WaitGroup
	for i := range accs {
		a := &streamAcc{deadline: deadline, codes: map[string]int64{}, endedBy: map[string]int64{}}
		accs[i] = a
		client := testpb.NewTestServiceClient(cs.ccs[i%len(cs.ccs)])
		wg.Go(func() {
			for ctx.Err() == nil {
				var err error
				if o.Mode == ServerStream {
					err = serverStream(ctx, client, deadline, interval, o.MessageBytes, cs, a)
				} else {
					err = bidiStream(ctx, client, interval, o.MessageBytes, cs, a)
				}
				if ctx.Err() != nil || !time.Now().Before(deadline) {
					return
				}
				if err != nil {
					sleepCtx(ctx, reopenPause)
				}
			}
		})
	}
	wg.Wait()
	var h h2dial.Histogram
	r.StreamEnds = map[string]int64{}
	for _, a := range accs {
		h.Merge(&a.h)
		r.Requests += a.msgs
		r.StreamsOpened += a.opened
		r.Errors += a.failed
		for k, v := range a.codes {
			r.Codes[k] += v
		}
		for k, v := range a.endedBy {
			r.StreamEnds[k] += v
		}
	}
	r.Latency = h.Summary()
}

// serverStream opens one StreamingOutputCall asking for a message every interval until past
// the deadline, and reads it until it ends. Each message's delay is measured against its due
// time on the server's schedule, from the moment the call was made. It returns an error when
// the stream could not be opened.
func serverStream(ctx context.Context, client testpb.TestServiceClient, deadline time.Time, interval time.Duration, size int,
	cs *clientConns, a *streamAcc) error {
	n := min(MaxResponses, int(math.Ceil(float64(time.Until(deadline)+time.Second)/float64(interval))))
	req := &testpb.StreamingOutputCallRequest{ResponseParameters: make([]*testpb.ResponseParameters, max(1, n))}
	for i := range req.ResponseParameters {
		req.ResponseParameters[i] = &testpb.ResponseParameters{Size: int32(size), IntervalUs: int32(interval.Microseconds())}
	}
	opened := time.Now()
	s, err := client.StreamingOutputCall(ctx, req)
	if err != nil {
		a.failedToOpen(ctx, err)
		return err
	}
	a.opened++
	for i := 1; ; i++ {
		_, err = s.Recv()
		if err != nil {
			break
		}
		a.msgs++
		a.h.Record(max(0, time.Since(opened.Add(time.Duration(i)*interval))))
	}
	cs.stream(s.Context(), opened, time.Now(), a.over(ctx))
	a.ended(ctx, err)
	return nil
}

// bidiStream opens one FullDuplexCall and sends a message every interval, each asking for one
// echo of size bytes at once; each echo's delay is from when its message was due. It returns
// an error when the stream could not be opened.
func bidiStream(ctx context.Context, client testpb.TestServiceClient, interval time.Duration, size int, cs *clientConns, a *streamAcc) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opened := time.Now()
	s, err := client.FullDuplexCall(sctx)
	if err != nil {
		a.failedToOpen(ctx, err)
		return err
	}
	a.opened++
	var mu sync.Mutex
	var due []time.Time // sent and not yet echoed, oldest first
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		req := &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: int32(size)}}}
		next := opened
		for sctx.Err() == nil {
			mu.Lock()
			due = append(due, next)
			mu.Unlock()
			if s.Send(req) != nil {
				return
			}
			next = next.Add(interval)
			sleepCtx(sctx, time.Until(next))
		}
	}()
	for {
		_, err = s.Recv()
		if err != nil {
			break
		}
		mu.Lock()
		var d time.Time
		if len(due) > 0 {
			d, due = due[0], due[1:]
		}
		mu.Unlock()
		a.msgs++
		if !d.IsZero() {
			a.h.Record(time.Since(d))
		}
	}
	cancel()
	<-sent
	cs.stream(s.Context(), opened, time.Now(), a.over(ctx))
	a.ended(ctx, err)
	return nil
}

// failedToOpen counts a stream that did not open, unless the window was over.
func (a *streamAcc) failedToOpen(ctx context.Context, err error) {
	if a.over(ctx) {
		return
	}
	a.failed++
	a.codes[status.Code(err).String()]++
}

// ended counts how a stream ended before the window did: the server completed it, or a
// status (the gateway's reset, an upstream that went away).
func (a *streamAcc) ended(ctx context.Context, err error) {
	if a.over(ctx) {
		return
	}
	switch {
	case errors.Is(err, io.EOF):
		a.codes[codes.OK.String()]++
		a.endedBy["completed"]++
	default:
		st := status.Convert(err)
		a.codes[st.Code().String()]++
		a.endedBy[st.Code().String()+": "+st.Message()]++
	}
}

// over says the window has ended.
func (a *streamAcc) over(ctx context.Context) bool {
	return ctx.Err() != nil || !time.Now().Before(a.deadline)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
