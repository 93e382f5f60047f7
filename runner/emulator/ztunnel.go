package emulator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/igwlab/igwlab/runner/stats"
)

// Ztunnel is ambient's node proxy of one node (the node of a backend replica). Every
// connection to the replica passes it and is counted as ztunnel counts it
// (istio_tcp_connections_opened_total and friends, reporter="destination"), on its own metrics
// port, so the dashboard's ztunnel panels have data on the local target too; the gateway's
// connections to the replica only pass it (no cost, no hop). For east-west traffic it is a
// proxy (out: ztunnel_outbound.go, ztunnel_inbound.go): it tunnels its node's client pods'
// connections over HBONE on threads that cost it time, and exports its threads' busy time
// and the source's counters too.
type Ztunnel struct {
	mu      sync.Mutex
	Name    string
	ip      string
	metrics net.Listener
	srv     *http.Server

	opened, closed, sent, received atomic.Int64
	// out is its outbound side, for the mesh pods on its node (ztunnel_outbound.go); nil
	// until a pod on the node is captured.
	out *ztProxy
	// tunnels counts the CONNECT streams it opened, hboneOpened the HBONE connections.
	tunnels, tunnelsClosed, hboneOpened, hboneClosed atomic.Int64
	// srcSent and srcReceived are the bytes of those tunnels, from the source's side.
	srcSent, srcReceived atomic.Int64
}

// MetricsURL is the base URL of the ztunnel's /metrics.
func (z *Ztunnel) MetricsURL() string { return "http://" + z.metrics.Addr().String() }

// wrap counts a listener's connections and bytes as this ztunnel's inbound traffic.
func (z *Ztunnel) wrap(ln net.Listener) net.Listener { return &ztListener{Listener: ln, z: z} }

type ztListener struct {
	net.Listener
	z *Ztunnel
}

func (l *ztListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.z.opened.Add(1)
	return &ztConn{Conn: c, z: l.z}, nil
}

type ztConn struct {
	net.Conn
	z      *Ztunnel
	closed atomic.Bool
}

// Read counts bytes the replica received; Write bytes it sent (ztunnel reports both from the
// destination's side).
func (c *ztConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.z.received.Add(int64(n))
	return n, err
}

func (c *ztConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.z.sent.Add(int64(n))
	return n, err
}

func (c *ztConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.z.closed.Add(1)
	}
	return c.Conn.Close()
}

func newZtunnel(name, ip string) (*Ztunnel, error) {
	ml, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	z := &Ztunnel{Name: name, ip: ip, metrics: ml}
	reg := prometheus.NewRegistry()
	reg.MustRegister(z)
	z.srv = &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = z.srv.Serve(ml) }()
	return z, nil
}

var (
	ztLabels = []string{"reporter", "source_workload", "destination_workload", "destination_workload_namespace", "request_protocol"}
	// The runtime's threads as ztunnel's tokio collector exports them; the HBONE connections
	// its outbound pool opened are the lab's own (ztunnel exports nothing of its pool).
	ztThreadBusy  = prometheus.NewDesc(stats.ZtunnelThreadBusy, "Total busy duration of each data-plane worker thread", []string{"worker"}, nil)
	ztWorkers     = prometheus.NewDesc(stats.ZtunnelWorkers, "Data-plane runtime worker threads", nil, nil)
	ztHBONEOpened = prometheus.NewDesc(stats.ZtunnelHBONEOpened, "HBONE connections the outbound pool opened (lab-only)", nil, nil)
	ztHBONEOpen   = prometheus.NewDesc(stats.ZtunnelHBONEActive, "HBONE connections open in the outbound pool (lab-only)", nil, nil)
	ztOpened      = prometheus.NewDesc("istio_tcp_connections_opened_total", "Total connections opened", ztLabels, nil)
	ztClosed      = prometheus.NewDesc("istio_tcp_connections_closed_total", "Total connections closed", ztLabels, nil)
	ztSent        = prometheus.NewDesc("istio_tcp_sent_bytes_total", "Bytes sent by the destination", ztLabels, nil)
	ztReceived    = prometheus.NewDesc("istio_tcp_received_bytes_total", "Bytes received by the destination", ztLabels, nil)
)

// Describe implements prometheus.Collector.
func (z *Ztunnel) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{ztOpened, ztClosed, ztSent, ztReceived, ztThreadBusy, ztWorkers, ztHBONEOpened, ztHBONEOpen} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (z *Ztunnel) Collect(ch chan<- prometheus.Metric) {
	lv := []string{"destination", "unknown", "httpbin", "igw-test", "tcp"}
	for _, m := range []struct {
		d *prometheus.Desc
		v *atomic.Int64
	}{{ztOpened, &z.opened}, {ztClosed, &z.closed}, {ztSent, &z.sent}, {ztReceived, &z.received}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v.Load()), lv...)
	}
	if o := z.outbound(); o != nil {
		src := []string{"source", "client", "waypoint", "igw-test", "tcp"}
		ch <- prometheus.MustNewConstMetric(ztOpened, prometheus.CounterValue, float64(z.tunnels.Load()), src...)
		ch <- prometheus.MustNewConstMetric(ztClosed, prometheus.CounterValue, float64(z.tunnelsClosed.Load()), src...)
		ch <- prometheus.MustNewConstMetric(ztSent, prometheus.CounterValue, float64(z.srcSent.Load()), src...)
		ch <- prometheus.MustNewConstMetric(ztReceived, prometheus.CounterValue, float64(z.srcReceived.Load()), src...)
		busy := o.threadsBusy()
		for i, b := range busy {
			ch <- prometheus.MustNewConstMetric(ztThreadBusy, prometheus.CounterValue, b.Seconds(), fmt.Sprint(i))
		}
		ch <- prometheus.MustNewConstMetric(ztWorkers, prometheus.GaugeValue, float64(len(busy)))
		ch <- prometheus.MustNewConstMetric(ztHBONEOpened, prometheus.CounterValue, float64(z.hboneOpened.Load()))
		ch <- prometheus.MustNewConstMetric(ztHBONEOpen, prometheus.GaugeValue, float64(z.hboneOpened.Load()-z.hboneClosed.Load()))
	}
}

// outbound is the ztunnel's outbound side, nil when no pod on its node is captured.
func (z *Ztunnel) outbound() *ztProxy {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.out
}

func (z *Ztunnel) close() {
	if o := z.outbound(); o != nil {
		o.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = z.srv.Shutdown(ctx)
}

// ztunnelName names a node's ztunnel pod like the DaemonSet's (ztunnel-<5 characters>).
func ztunnelName(node int) string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	b := []byte("ztunnel-")
	for i, x := 0, node*7919+13; i < 5; i, x = i+1, x*31+7 {
		b = append(b, letters[x%len(letters)])
	}
	return string(b)
}
