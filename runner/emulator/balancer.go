package emulator

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// Balance modes of the L4 balancer (model.L4).
const (
	BalanceRandom     = model.BalanceRandom
	BalanceRoundRobin = model.BalanceRoundRobin
	BalanceSourceHash = model.BalanceSourceHash
)

// L4 data paths.
const (
	// PathHandoff gives the accepted connection itself to the chosen pod, as kube-proxy's DNAT
	// does: no second connection, no copying.
	PathHandoff = "handoff"
	// PathProxy opens a connection to the pod and splices bytes both ways, as a userspace L4
	// proxy does; the pod's SO_REUSEPORT sockets then pick the worker.
	PathProxy = "proxy"
)

// Balancer is the L4 load balancer in front of a pod tier (the Service VIP): it accepts a TCP
// connection and picks a ready pod once for the connection's life. It never looks inside the
// stream, so every request of a connection lands on the same pod.
type Balancer struct {
	ln      net.Listener
	mode    string
	path    string
	pods    func() []*Pod
	mu      sync.Mutex
	l4      *model.L4 // the pick (runner/model/balance.go)
	conns   map[net.Conn]struct{}
	opened  atomic.Int64
	perPod  sync.Map // pod name -> *atomic.Int64 connections sent
	closing atomic.Bool
	// rtt is the round-trip time between clients and the pods, put on every connection.
	rtt   time.Duration
	clock *Clock
}

func newBalancer(addr, mode, path string, seed uint64, pods func() []*Pod) (*Balancer, error) {
	if path != PathHandoff && path != PathProxy {
		return nil, fmt.Errorf("l4 path %q: allowed %s, %s", path, PathHandoff, PathProxy)
	}
	switch mode {
	case BalanceRandom, BalanceRoundRobin, BalanceSourceHash:
	default:
		return nil, fmt.Errorf("balance %q: allowed %s, %s, %s", mode, BalanceRandom, BalanceRoundRobin, BalanceSourceHash)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	b := &Balancer{ln: ln, mode: mode, path: path, pods: pods, l4: model.NewL4(mode, seed), conns: map[net.Conn]struct{}{}}
	go b.accept()
	return b, nil
}

// Addr is the VIP's host:port.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// Opened counts connections accepted.
func (b *Balancer) Opened() int64 { return b.opened.Load() }

// SentTo returns how many connections went to each pod.
func (b *Balancer) SentTo() map[string]int64 {
	out := map[string]int64{}
	b.perPod.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

func (b *Balancer) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		b.opened.Add(1)
		go b.forward(c)
	}
}

// reseed restarts the balancer's picks from seed (model.L4.Reseed).
func (b *Balancer) reseed(seed uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.l4.Reseed(seed)
}

func (b *Balancer) pick(client net.Addr) *Pod {
	var ready []*Pod
	for _, p := range b.pods() {
		if p.Serving() {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	ip := client.String()
	if ta, ok := client.(*net.TCPAddr); ok {
		ip = ta.IP.String()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return ready[b.l4.Pick(len(ready), ip)]
}

func (b *Balancer) forward(c net.Conn) {
	p := b.pick(c.RemoteAddr())
	if p == nil {
		c.Close() // no ready endpoint: the connection is refused, as with a Service without endpoints
		return
	}
	v, _ := b.perPod.LoadOrStore(p.Name, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	if b.path == PathHandoff {
		p.accept(withRTT(c, b.rtt, b.clock), -1)
		return
	}
	defer c.Close()
	addr := p.Addr()
	if addr == "" {
		return
	}
	pc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	pc = withRTT(pc, b.rtt, b.clock)
	defer pc.Close()
	b.track(c, pc, true)
	defer b.track(c, pc, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // TCP to TCP: splice(2) on Linux, no copy through user space
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(pc, c)
	go pipe(c, pc)
	<-done
	<-done
}

func (b *Balancer) track(c, pc net.Conn, add bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if add {
		b.conns[c], b.conns[pc] = struct{}{}, struct{}{}
	} else {
		delete(b.conns, c)
		delete(b.conns, pc)
	}
}

// Close stops accepting and cuts every forwarded connection.
func (b *Balancer) Close() {
	b.closing.Store(true)
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
}
