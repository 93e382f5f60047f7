package emulator

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/stacks"
)

func dialVIP(t *testing.T, p *Pool, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", p.VIP())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var sum int64
		for _, v := range p.Balancer().SentTo() {
			sum += v
		}
		if sum >= int64(n) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBalancerModes(t *testing.T) {
	const n = 1200
	for _, mode := range []string{BalanceRandom, BalanceRoundRobin, BalanceSourceHash} {
		t.Run(mode, func(t *testing.T) {
			p := testPool(t, Config{Pods: 6, Balance: mode}, stacks.Knobs{})
			dialVIP(t, p, n)
			sent := p.Balancer().SentTo()
			var counts []float64
			for _, pod := range p.Pods() {
				counts = append(counts, float64(sent[pod.Name]))
			}
			var chi2 float64
			for _, c := range counts {
				chi2 += (c - n/6.0) * (c - n/6.0) / (n / 6.0)
			}
			switch mode {
			case BalanceRandom:
				// 5 degrees of freedom: above 30 has probability below 2e-5 for a uniform pick.
				if chi2 > 30 {
					t.Fatalf("random placement not uniform: %v (chi2 %.1f)", counts, chi2)
				}
			case BalanceRoundRobin:
				for _, c := range counts {
					if c != n/6 {
						t.Fatalf("round-robin uneven: %v", counts)
					}
				}
			case BalanceSourceHash:
				nonzero := 0
				for _, c := range counts {
					if c > 0 {
						nonzero++
					}
				}
				if nonzero != 1 {
					t.Fatalf("source-hash spread one client IP over %d pods: %v", nonzero, counts)
				}
			}
		})
	}
}

func TestPodsListenOnLoopbackOnly(t *testing.T) {
	p := testPool(t, Config{Pods: 3, WaypointPods: 2}, stacks.Knobs{})
	addrs := append([]string{p.VIP(), p.backends.GRPC, p.waypointVIP.Addr()}, p.backends.HTTPBin...)
	for _, z := range p.Ztunnels() {
		addrs = append(addrs, strings.TrimPrefix(z.MetricsURL(), "http://"))
	}
	for _, pod := range append(p.Pods(), p.Waypoints()...) {
		addrs = append(addrs, pod.Addr(), strings.TrimPrefix(pod.AdminURL(), "http://"))
	}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Fatalf("%s is not a loopback address", a)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestIstioStatNames checks the names and labels Istio's proxy really uses, quirks included:
// the HCM prefix and cluster names end in ";" in admin names, the worker id stays in the
// Prometheus name, and _total is part of the stat name, never added.
func TestIstioStatNames(t *testing.T) {
	p := testPool(t, Config{Pods: 1, Workers: 2}, stacks.Knobs{})
	pod := p.Pods()[0]
	if _, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/get", Concurrency: 4, Duration: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	text := get(t, pod.AdminURL()+"/stats")
	for _, want := range []string{
		"http.outbound_0.0.0.0_80;.downstream_cx_http2_total: ",
		"http.outbound_0.0.0.0_80;.downstream_cx_max_requests_reached: ",
		"listener.0.0.0.0_80.worker_1.downstream_cx_total: ",
		"cluster.outbound|8080||httpbin.igw-test.svc.cluster.local;.upstream_rq_pending_active: ",
		"http.outbound_0.0.0.0_80;.downstream_rq_time: P0(nan,",
		"server.concurrency: 2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/stats lacks %q", want)
		}
	}
	prom := get(t, pod.AdminURL()+"/stats/prometheus")
	for _, want := range []string{
		`envoy_http_downstream_cx_http2_total{http_conn_manager_prefix="outbound_0.0.0.0_80"}`,
		`envoy_http_downstream_cx_max_requests_reached{http_conn_manager_prefix="outbound_0.0.0.0_80"}`,
		`envoy_listener_worker_0_downstream_cx_total{listener_address="0.0.0.0_80"}`,
		`envoy_cluster_upstream_flow_control_paused_reading_total{cluster_name="outbound|8080||httpbin.igw-test.svc.cluster.local"}`,
		`envoy_http_downstream_rq_time_bucket{http_conn_manager_prefix="outbound_0.0.0.0_80",le="0.5"}`,
		`envoy_igwlab_worker_busy_ns{worker="1"}`,
	} {
		if !strings.Contains(prom, want) {
			t.Errorf("/stats/prometheus lacks %s", want)
		}
	}
	if strings.Contains(prom, "max_requests_reached_total") {
		t.Error("a _total suffix was added to a stat whose name has none")
	}
	if !strings.Contains(get(t, pod.AdminURL()+"/server_info"), `"concurrency":2`) {
		t.Error("server_info lacks concurrency")
	}
}

func TestJWTFilterPermissiveAndStrict(t *testing.T) {
	p := testPool(t, Config{}, stacks.Knobs{})
	tok := p.Token("igwlab.local")
	cases := []struct {
		mode, authz string
		want        string
	}{
		{"permissive", "", "200"},
		{"permissive", "Bearer " + tok, "200"},
		{"permissive", "Bearer " + tok[:len(tok)-4] + "abcd", "401"},
		{"permissive", "Bearer " + p.Token("someone-else"), "401"},
		{"strict", "", "403"},
		{"strict", "Bearer " + tok, "200"},
	}
	for _, c := range cases {
		p.Apply(Setup{Filters: stacks.Filters{JWT: &stacks.JWT{Mode: c.mode, Issuer: "igwlab.local"}}})
		rc := dialRaw(t, p.Pods()[0].Addr(), true)
		var extra []hpack.HeaderField
		if c.authz != "" {
			extra = append(extra, hpack.HeaderField{Name: "authorization", Value: c.authz})
		}
		rc.headers(1, "GET", "/get", true, extra...)
		frames, err := rc.read(2*time.Second, func(f frameInfo) bool { return f.typ == http2.FrameHeaders })
		if err != nil {
			t.Fatal(err)
		}
		if got := frames[len(frames)-1].status; got != c.want {
			t.Errorf("%s with %q: status %s, want %s", c.mode, c.authz[:min(len(c.authz), 14)], got, c.want)
		}
	}
}

// lockedLog is an access log sink a test may read while the pool writes to it.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedLog) Len() int { return len(l.String()) }

func TestAccessLogOnlyMatchingFlags(t *testing.T) {
	log := &lockedLog{}
	p := testPool(t, Config{AccessLog: log}, stacks.Knobs{})
	p.Apply(Setup{Filters: stacks.Filters{AccessLog: &stacks.AccessLog{ResponseFlags: []string{"UF"}}}})
	if _, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/get", Concurrency: 2, Duration: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 {
		t.Fatalf("entries for requests without the flag: %s", log.String())
	}
	p.backends.Close() // now the upstream refuses: response flag UF
	res, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/get", Concurrency: 1, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// An entry is written once its response has gone out: give the last ones a moment.
	deadline := time.Now().Add(time.Second)
	for !strings.Contains(log.String(), `"response_flags":"UF"`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if res.StatusCodes["503"] == 0 || !strings.Contains(log.String(), `"response_flags":"UF"`) {
		t.Fatalf("503s %d; log %q", res.StatusCodes["503"], log.String())
	}
}

// TestWorkerModel checks the single-server model: offered load / capacity shows as the busy
// ratio, and a closed loop on one worker runs at its capacity.
func TestWorkerModel(t *testing.T) {
	m := Model{ServiceTime: time.Millisecond}
	p := testPool(t, Config{Model: m}, stacks.Knobs{})
	pod := p.Pods()[0]
	w := pod.Workers()[0]
	b0 := w.BusyNs.Value()
	start := time.Now()
	res, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/get", Mode: h2dial.Distinct,
		Concurrency: 4, QPS: 300, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	busy := float64(w.BusyNs.Value()-b0) / float64(time.Since(start))
	want := res.RPS * m.ServiceTime.Seconds() // 300 rps x 1 ms = 0.30
	if math.Abs(busy-want) > 0.05 {
		t.Fatalf("busy ratio %.3f at %.0f rps, want %.3f", busy, res.RPS, want)
	}
	// A starved CPU can only slow the pool below its model, never speed a worker past it: more
	// than the worker's capacity fails at once, less is measured again before it fails.
	retry(t, 3, func() error {
		res, err = h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/get", Mode: h2dial.Shared,
			Concurrency: 50, Duration: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.RPS > 1050 {
			t.Fatalf("a saturated 1 ms worker served %.0f rps, more than its capacity of 1000", res.RPS)
		}
		if res.RPS < 850 {
			return fmt.Errorf("a saturated 1 ms worker served %.0f rps, want about 1000", res.RPS)
		}
		return nil
	})
	if res.Latency.P50 < 35 {
		t.Fatalf("50 requests queued on a 1 ms worker had p50 %.1f ms, want about 50", res.Latency.P50)
	}
}
