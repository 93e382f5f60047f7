package grpclab

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// backend starts the lab's gRPC backend on loopback and returns its address.
func backend(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

// The stream modes hold their streams for the window, each carrying messages at the rate
// asked, on the one connection of one ClientConn.
func TestStreamModes(t *testing.T) {
	addr := backend(t)
	for _, mode := range []string{ServerStream, Bidi} {
		t.Run(mode, func(t *testing.T) {
			r, err := Run(context.Background(), Options{Target: addr, Concurrency: 4, Duration: 600 * time.Millisecond,
				Mode: mode, Rate: 50, MessageBytes: 100})
			if err != nil {
				t.Fatal(err)
			}
			// 4 streams x 50/s x 0.6 s = 120 messages; a loaded machine sends some late.
			if r.Requests < 80 || r.Requests > 130 {
				t.Errorf("%d messages, want about 120: %+v", r.Requests, r)
			}
			if r.StreamsOpened != 4 || r.Errors != 0 || len(r.StreamEnds) != 0 {
				t.Errorf("streams opened %d, failed %d, ended early %v: want 4 held for the window", r.StreamsOpened, r.Errors, r.StreamEnds)
			}
			if r.Dials != 1 || len(r.Conns) != 1 || len(r.Conns[0].Streams) != 4 {
				t.Fatalf("connections %+v: want one carrying the 4 streams", r.Conns)
			}
			for _, s := range r.Conns[0].Streams {
				if s.StartS < 0 || s.StartS > 0.2 || s.EndS < 0.5 || s.EndS > 0.61 {
					t.Errorf("stream %+v: want it open from the start to the end of the 0.6 s window", s)
				}
			}
			if r.Latency.P50 <= 0 || r.Latency.P50 > 50 {
				t.Errorf("message delay p50 %.2f ms on loopback", r.Latency.P50)
			}
			if !strings.Contains(r.Text(), "streams opened: 4") {
				t.Errorf("summary %q", r.Text())
			}
		})
	}
}

// round_robin keeps one connection per address and spreads calls over them; pick_first one
// per ClientConn, a pool of them one each.
func TestBalancing(t *testing.T) {
	addrs := []string{backend(t), backend(t), backend(t)}
	cases := []struct {
		name  string
		o     Options
		dials int
	}{
		{"pick_first", Options{Target: addrs[0]}, 1},
		{"pool of 4", Options{Target: addrs[0], Connections: 4}, 4},
		{"round_robin over 3", Options{Target: addrs[0], LB: RoundRobin, Addresses: addrs}, 3},
		{"server streams round_robin", Options{Target: addrs[0], LB: RoundRobin, Addresses: addrs, Mode: ServerStream, Rate: 20}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Concurrency, c.o.Duration = 6, 300*time.Millisecond
			r, err := Run(context.Background(), c.o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Dials != c.dials || r.Requests == 0 || r.Errors != 0 {
				t.Errorf("%d dials, %d requests, %d errors: want %d dials and no errors", r.Dials, r.Requests, r.Errors, c.dials)
			}
			if c.o.Mode == ServerStream {
				for _, cn := range r.Conns {
					if len(cn.Streams) != 2 {
						t.Errorf("connection %s carried %d streams, want 2 of the 6 on each of 3", cn.Local, len(cn.Streams))
					}
				}
			}
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	ok := Options{Target: "127.0.0.1:1", Concurrency: 1, Duration: time.Second}
	cases := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"mode", func(o *Options) { o.Mode = "stream" }, `mode "stream": allowed unary, server-stream, bidi`},
		{"rate in unary", func(o *Options) { o.Rate = 5 }, "in the stream modes only"},
		{"rate too high", func(o *Options) { o.Mode, o.Rate = Bidi, 5000 }, "allowed (0, 1000]"},
		{"negative rate", func(o *Options) { o.Mode, o.Rate = Bidi, -1 }, "allowed (0, 1000]"},
		{"message bytes", func(o *Options) { o.Mode, o.MessageBytes = ServerStream, MaxResponseSize+1 }, "message bytes"},
		{"lb", func(o *Options) { o.LB = "least_request" }, `lb "least_request": allowed pick_first, round_robin`},
		{"round robin without addresses", func(o *Options) { o.LB = RoundRobin }, "round_robin needs the addresses"},
		{"addresses without round robin", func(o *Options) { o.Addresses = []string{"127.0.0.1:2"} }, "only round_robin"},
		{"bad address", func(o *Options) { o.LB, o.Addresses = RoundRobin, []string{"nowhere"} }, `address "nowhere": want host:port`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.edit(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want an error with %q", err, c.want)
			}
		})
	}
	o := ok
	if err := o.Validate(); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	remote := Options{Target: "dns:///gateway.example:80", Concurrency: 1, Duration: time.Second, LB: RoundRobin}
	if _, err := Run(context.Background(), remote); err == nil || !strings.Contains(err.Error(), "allow remote") {
		t.Errorf("a dns target without AllowRemote: %v", err)
	}
}
