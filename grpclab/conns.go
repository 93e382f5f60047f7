package grpclab

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/igwlab/igwlab/h2dial"
)

// clientConns are the client's ClientConns and a record of every connection they open: when,
// and (in the stream modes) the streams each carried, told apart by their local address.
type clientConns struct {
	ccs []*grpc.ClientConn
	// answers are the re-resolutions due (Names), stopped at close.
	answers []*time.Timer
	closed  bool

	mu     sync.Mutex
	origin time.Time
	conns  map[string]*h2dial.ConnUse
	order  []string
	ndials int
}

// roundRobinConfig is grpc-go's service config for round_robin (balancer/roundrobin).
const roundRobinConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// dialConns makes o.Connections ClientConns (at least one). With PickFirst each dials the
// target as given (passthrough: one connection, wherever the L4 balancer puts it); with
// RoundRobin each resolves the addresses (a manual resolver over o.Addresses, or DNS for a
// dns:/// target) and keeps one connection per address (endpointsharding over pick_first).
func dialConns(o Options) (*clientConns, error) {
	cs := &clientConns{origin: time.Now(), conns: map[string]*h2dial.ConnUse{}}
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			cs.opened(c.LocalAddr().String())
		}
		return c, err
	}
	for range max(1, o.Connections) {
		creds := insecure.NewCredentials()
		if o.TLS {
			creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the lab's gateway certificate, self-signed
		}
		opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithContextDialer(dialer)}
		if o.Authority != "" {
			opts = append(opts, grpc.WithAuthority(o.Authority))
		}
		target := "passthrough:///" + o.Target
		if o.LB == RoundRobin {
			opts = append(opts, grpc.WithDefaultServiceConfig(roundRobinConfig))
			target = o.Target
			if len(o.Addresses) > 0 {
				r := manual.NewBuilderWithScheme("igwlab")
				r.InitialState(stateOf(o.Addresses))
				if o.Names != nil {
					cs.resolveAgain(r, o.Names)
				}
				opts = append(opts, grpc.WithResolvers(r))
				target = "igwlab:///gateway"
			}
		}
		cc, err := grpc.NewClient(target, opts...)
		if err != nil {
			cs.close()
			return nil, fmt.Errorf("grpc client: %w", err)
		}
		cs.ccs = append(cs.ccs, cc)
	}
	return cs, nil
}

func (cs *clientConns) close() {
	cs.mu.Lock()
	cs.closed = true
	for _, t := range cs.answers {
		t.Stop()
	}
	cs.mu.Unlock()
	for _, cc := range cs.ccs {
		cc.Close()
	}
}

// resolveAgain makes the manual resolver r answer grpc-go's ResolveNow as a DNS name would: at
// the time the name's rule says, with the addresses it has then.
func (cs *clientConns) resolveAgain(r *manual.Resolver, n *Names) {
	name := n.New()
	name.Resolved(time.Now())
	r.ResolveNowCallback = func(resolver.ResolveNowOptions) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		at, ok := name.Request(time.Now())
		if !ok || cs.closed {
			return
		}
		cs.answers = append(cs.answers, time.AfterFunc(time.Until(at), func() {
			cs.mu.Lock()
			if cs.closed {
				cs.mu.Unlock()
				return
			}
			name.Resolved(time.Now())
			cs.mu.Unlock()
			if addrs := n.Resolve(); len(addrs) > 0 {
				r.UpdateState(stateOf(addrs))
			}
		}))
	}
}

// start sets the time the records count from: the window's start.
func (cs *clientConns) start(t time.Time) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	shift := cs.origin.Sub(t).Seconds()
	for _, c := range cs.conns {
		c.OpenedS += shift
	}
	cs.origin = t
}

func (cs *clientConns) opened(local string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.ndials++
	if _, ok := cs.conns[local]; !ok { // a local port used again: the record goes on
		cs.order = append(cs.order, local)
	}
	cs.conns[local] = &h2dial.ConnUse{Local: local, OpenedS: time.Since(cs.origin).Seconds()}
}

func (cs *clientConns) dials() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.ndials
}

// stream records a stream's life on the connection its context names; open says the window
// ended it.
func (cs *clientConns) stream(ctx context.Context, start, end time.Time, open bool) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.LocalAddr == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.conns[p.LocalAddr.String()]
	if c == nil {
		return
	}
	c.Streams = append(c.Streams, h2dial.Span{StartS: start.Sub(cs.origin).Seconds(), EndS: end.Sub(cs.origin).Seconds(), Open: open})
}

// used lists the connections in the order they were opened, each with its streams in the
// order they started; a stream's end is at most the window's.
func (cs *clientConns) used(window time.Duration) []h2dial.ConnUse {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]h2dial.ConnUse, 0, len(cs.order))
	for _, l := range cs.order {
		c := *cs.conns[l]
		c.Streams = append([]h2dial.Span(nil), c.Streams...)
		for i, sp := range c.Streams {
			if sp.Open || sp.EndS > window.Seconds() {
				c.Streams[i].EndS = window.Seconds()
			}
		}
		sort.Slice(c.Streams, func(i, j int) bool { return c.Streams[i].StartS < c.Streams[j].StartS })
		out = append(out, c)
	}
	return out
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// primeWait bounds the wait for a client's connections before its window starts.
const primeWait = 5 * time.Second

// prime makes every ClientConn's connections ready before the window starts, as a long-running
// client's are: calls EmptyCall on each (any answer will do) until each has answered on want connections (one for
// pick_first, one per address for round_robin; with a dns:/// target, until no new one answers
// for a while), so that a window's first streams are spread as its later ones would be, not
// piled on the first connection to come up.
func (cs *clientConns) prime(ctx context.Context, want int) error {
	ctx, cancel := context.WithTimeout(ctx, primeWait)
	defer cancel()
	for _, cc := range cs.ccs {
		client := testpb.NewTestServiceClient(cc)
		seen := map[string]bool{}
		lastNew := time.Now()
		for {
			var p peer.Peer
			_, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true), grpc.Peer(&p))
			if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded && c != codes.Canceled {
				err = nil // the server answered (a server without EmptyCall too): the connection is up
			}
			if err != nil && len(seen) > 0 && ctx.Err() != nil {
				break // some never came up (a pod down): the window starts with those that did
			}
			if err != nil {
				return fmt.Errorf("readying the gRPC client's connections (%s at most): %w", primeWait, err)
			}
			if p.LocalAddr != nil && !seen[p.LocalAddr.String()] {
				seen[p.LocalAddr.String()] = true
				lastNew = time.Now()
			}
			if want > 0 && len(seen) >= want || want == 0 && time.Since(lastNew) > 200*time.Millisecond {
				break
			}
		}
	}
	return nil
}

// stateOf is what a name resolves to: its addresses.
func stateOf(addrs []string) resolver.State {
	st := resolver.State{}
	for _, a := range addrs {
		st.Addresses = append(st.Addresses, resolver.Address{Addr: a})
	}
	return st
}
