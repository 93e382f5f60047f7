package grpclab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// The interop service's streaming methods, as the grpc-go interop server answers them: one
// message per ResponseParameters, of its size, after its interval. Each message is due at the
// sum of the intervals before it from the call's start rather than an interval after the last
// send, so a message the network held up does not push every later one back: the client reads
// the delay of each message against that schedule.

// MaxResponses bounds the messages one request may ask for: an hour of a stream at 100 a second.
const MaxResponses = 360000

// maxInterval bounds one ResponseParameters' interval.
const maxInterval = time.Minute

func (testService) StreamingOutputCall(in *testpb.StreamingOutputCallRequest, out grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	ctx := out.Context()
	start := time.Now()
	var at time.Time
	return sendScheduled(ctx, start, &at, in.GetResponseParameters(), out.Send)
}

func (testService) FullDuplexCall(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	ctx := s.Context()
	for {
		in, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		now := time.Now()
		var at time.Time
		if err := sendScheduled(ctx, now, &at, in.GetResponseParameters(), s.Send); err != nil {
			return err
		}
	}
}

// sendScheduled sends one message per parameter, each at start plus the intervals up to it.
func sendScheduled(ctx context.Context, start time.Time, at *time.Time, params []*testpb.ResponseParameters,
	send func(*testpb.StreamingOutputCallResponse) error) error {
	if len(params) > MaxResponses {
		return status.Errorf(codes.InvalidArgument, "%d response parameters: at most %d", len(params), MaxResponses)
	}
	*at = start
	for i, p := range params {
		iv := time.Duration(p.GetIntervalUs()) * time.Microsecond
		if iv < 0 || iv > maxInterval {
			return status.Errorf(codes.InvalidArgument, "response_parameters[%d].interval_us %d: allowed 0..%d", i, p.GetIntervalUs(), maxInterval.Microseconds())
		}
		size := int(p.GetSize())
		if size < 0 || size > MaxResponseSize {
			return status.Errorf(codes.InvalidArgument, "response_parameters[%d].size %d: allowed 0..%d", i, size, MaxResponseSize)
		}
		*at = at.Add(iv)
		if d := time.Until(*at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return status.FromContextError(ctx.Err()).Err()
			case <-t.C:
			}
		}
		if err := send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, size)}}); err != nil {
			return fmt.Errorf("sending message %d: %w", i, err)
		}
	}
	return nil
}
