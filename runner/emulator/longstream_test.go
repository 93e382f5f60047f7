package emulator

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/igwlab/igwlab/grpclab"
	"github.com/igwlab/igwlab/stacks"
)

// h2cClient speaks HTTP/2 with prior knowledge, as the lab's clients do.
func h2cClient() *http.Client {
	return &http.Client{Transport: &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}}
}

// Long-lived streams through the gateway, with grpc-go's own client and server: what
// max_stream_duration does to them, and what rotation does and does not.

const grpcAuthority = "grpcbin.igw-test"

func streams(t *testing.T, addr string, concurrency int, d time.Duration) *grpclab.Result {
	t.Helper()
	r, err := grpclab.Run(context.Background(), grpclab.Options{Target: addr, Authority: grpcAuthority, Concurrency: concurrency,
		Duration: d, Mode: grpclab.ServerStream, Rate: 50, MessageBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resetByDuration is how grpc-go reports the gateway's RST_STREAM NO_ERROR.
const resetByDuration = "Internal: stream terminated by RST_STREAM with error code: NO_ERROR"

// Once its response has started, a stream past max_stream_duration is reset with
// RST_STREAM NO_ERROR; the client opens the next one on the same connection, which no
// drain asked it to leave.
func TestMaxStreamDurationResetsStreamsOnTheirConnection(t *testing.T) {
	p := testPool(t, Config{}, knobs(t, "hcm.common_http_protocol_options.max_stream_duration", "0.3s"))
	pod := p.Pods()[0]
	r := streams(t, pod.Addr(), 2, 1100*time.Millisecond)
	// Each of the 2 streams lives 0.3 s: 3 resets each in 1.1 s.
	if got := r.StreamEnds[resetByDuration]; got < 4 || got > 8 {
		t.Fatalf("streams ended %v, want about 6 by %q", r.StreamEnds, resetByDuration)
	}
	if r.Dials != 1 {
		t.Fatalf("%d connections: the streams should come back on the one connection (nothing drained it)", r.Dials)
	}
	if got := statValue(t, pod, hcmName(pod, "downstream_rq_max_duration_reached")); got < 4 {
		t.Fatalf("downstream_rq_max_duration_reached %d, want one per reset", got)
	}
	if got := statValue(t, pod, hcmName(pod, "downstream_cx_max_duration_reached")); got != 0 {
		t.Fatalf("downstream_cx_max_duration_reached %d: a stream's limit is not the connection's", got)
	}
}

// Rotation drains a connection, but a connection whose streams never end stays open: its
// streams keep it for the whole run. max_stream_duration ends them, and the client opens
// their successors on a new connection.
func TestRotationMovesLongStreamsOnlyWhenTheyEnd(t *testing.T) {
	rotation := []string{"hcm.common_http_protocol_options.max_requests_per_connection", "2", "hcm.drain_timeout", "0.2s"}
	t.Run("rotation alone", func(t *testing.T) {
		p := testPool(t, Config{}, knobs(t, rotation...))
		pod := p.Pods()[0]
		r := streams(t, pod.Addr(), 4, time.Second)
		if len(r.StreamEnds) != 0 || r.StreamsOpened != 4 {
			t.Fatalf("streams ended %v, opened %d: a drain ends no stream", r.StreamEnds, r.StreamsOpened)
		}
		if got := statValue(t, pod, hcmName(pod, "downstream_cx_max_requests_reached")); got < 1 {
			t.Fatalf("downstream_cx_max_requests_reached %d: the limit was passed", got)
		}
		// The gateway closed nothing (destroy_local); the client closes its connection when the
		// run ends, which may reach the pod before the stats are read (destroy_remote).
		if got := statValue(t, pod, hcmName(pod, "downstream_cx_destroy_local")); got != 0 {
			t.Fatalf("downstream_cx_destroy_local %d during the run: the drained connection should have stayed open under its streams", got)
		}
	})
	t.Run("with max_stream_duration", func(t *testing.T) {
		p := testPool(t, Config{}, knobs(t, append(rotation, "hcm.common_http_protocol_options.max_stream_duration", "0.25s")...))
		r := streams(t, p.Pods()[0].Addr(), 4, 1200*time.Millisecond)
		if r.Dials < 3 {
			t.Fatalf("%d connections: each round of resets should move the streams to a new one (%v)", r.Dials, r.StreamEnds)
		}
		moved := 0
		for _, c := range r.Conns {
			if len(c.Streams) > 0 && c.OpenedS > 0.1 {
				moved++
			}
		}
		if moved < 2 {
			t.Fatalf("streams on later connections: %+v", r.Conns)
		}
	})
}

// Before any response has started, max_stream_duration answers itself: grpc-status 4 to a
// gRPC call, 504 to a request that has arrived whole.
func TestMaxStreamDurationLocalReply(t *testing.T) {
	p := testPool(t, Config{}, knobs(t, "hcm.common_http_protocol_options.max_stream_duration", "0.2s"))
	pod := p.Pods()[0]

	cc, err := grpc.NewClient("passthrough:///"+pod.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(grpcAuthority))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	// The backend sends nothing, headers included, before its first message is due.
	s, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(context.Background(), &testpb.StreamingOutputCallRequest{
		ResponseParameters: []*testpb.ResponseParameters{{Size: 1, IntervalUs: 2e6}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv()
	if st := status.Convert(err); st.Code() != codes.DeadlineExceeded || st.Message() != "downstream duration timeout" {
		t.Fatalf("gRPC call ended with %v, want DEADLINE_EXCEEDED \"downstream duration timeout\"", err)
	}

	resp, err := h2cClient().Get("http://" + pod.Addr() + "/delay/1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || strings.TrimSpace(string(body)) != "downstream duration timeout" {
		t.Fatalf("GET /delay/1 answered %d %q, want 504 \"downstream duration timeout\"", resp.StatusCode, body)
	}
	if got := waitStat(t, pod, hcmName(pod, "downstream_rq_max_duration_reached"), 2); got != 2 {
		t.Fatalf("downstream_rq_max_duration_reached %d, want 2", got)
	}
}

// A stream's later messages cost its worker a frame's work each; its first, the request's.
func TestStreamedMessagesCostTheWorker(t *testing.T) {
	p := testPool(t, Config{Model: Model{ServiceTime: 50 * time.Microsecond, PerFrame: 2 * time.Millisecond}}, stacks.Knobs{})
	pod := p.Pods()[0]
	before := pod.Workers()[0].Busy()
	r := streams(t, pod.Addr(), 1, time.Second)
	busy := pod.Workers()[0].Busy() - before
	// About 50 messages: 49 of them at 2 ms.
	want := time.Duration(r.Requests-1) * 2 * time.Millisecond
	if r.Requests < 30 || busy < want*8/10 || busy > want*13/10+10*time.Millisecond {
		t.Fatalf("%d messages kept the worker busy %s, want about %s", r.Requests, busy, want)
	}
}
