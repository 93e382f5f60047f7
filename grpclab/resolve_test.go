package grpclab

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// countingListener counts the connections a backend accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// serveCounting starts the backend with grpc-go's server options and counts its connections.
func serveCounting(t *testing.T, opts ...grpc.ServerOption) *countingListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	s := NewServer(opts...)
	go func() { _ = s.Serve(cl) }()
	t.Cleanup(s.Stop)
	return cl
}

// at once answers every ResolveNow at once (the test's own rule; the lab's is model.Resolution).
type atOnce struct{}

func (atOnce) Resolved(time.Time)                      {}
func (atOnce) Request(now time.Time) (time.Time, bool) { return now, true }

// TestResolveAgain: a round_robin client started on one address learns of two more only when
// grpc-go asks its resolver again, which it does when a connection is lost: here the first
// backend's GOAWAYs (its connections' maximum age). Without Names it never asks anything that
// answers, and the other two backends see no connection.
func TestResolveAgain(t *testing.T) {
	aged := serveCounting(t, grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: 200 * time.Millisecond, MaxConnectionAgeGrace: time.Second}))
	added := []*countingListener{serveCounting(t), serveCounting(t)}
	all := []string{aged.Addr().String(), added[0].Addr().String(), added[1].Addr().String()}
	for _, c := range []struct {
		name  string
		names *Names
		want  bool
	}{
		{"resolved once", nil, false},
		{"resolved again", &Names{New: func() Name { return atOnce{} }, Resolve: func() []string { return all }}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := []int64{added[0].n.Load(), added[1].n.Load()}
			r, err := Run(context.Background(), Options{Target: all[0], LB: RoundRobin, Addresses: all[:1], Names: c.names,
				Concurrency: 6, Duration: 1200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors != 0 || r.Requests == 0 {
				t.Errorf("%d requests, %d errors", r.Requests, r.Errors)
			}
			for i, l := range added {
				if got := l.n.Load() > before[i]; got != c.want {
					t.Errorf("backend %d added later: connected %v, want %v (%d dials in all)", i+1, got, c.want, r.Dials)
				}
			}
		})
	}
}
