package stats

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func fixture(t *testing.T) Snapshot {
	t.Helper()
	raw, err := os.ReadFile("testdata/istio-gateway.prom")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSnapshot("istio-ingressgateway-abc", time.Now(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDiscoverIstioNames(t *testing.T) {
	n, err := Discover([]Snapshot{fixture(t)}, "httpbin")
	if err != nil {
		t.Fatal(err)
	}
	want := Names{HCMPrefix: "outbound_0.0.0.0_80", Listener: "0.0.0.0_80", Cluster: "outbound|8080||httpbin.igw-test.svc.cluster.local"}
	if n != want {
		t.Fatalf("discovered %+v, want %+v", n, want)
	}
}

func TestExtractFromIstioNaming(t *testing.T) {
	s := fixture(t)
	n, _ := Discover([]Snapshot{s}, "httpbin")
	p := Extract(s, n)
	if p.CxHTTP2Total != 11 || p.CxActive != 3 || p.MaxRequestsReached != 5402 || p.Paused != 7 {
		t.Fatalf("extracted %+v", p)
	}
	if p.WorkerCx[0] != 9 || p.WorkerCx[1] != 3 || len(p.WorkerCx) != 2 {
		t.Fatalf("per-worker connections %v (the 15090 listener must not leak in)", p.WorkerCx)
	}
	if q := p.RqTime.Quantile(0.5); math.Abs(q-(1+4*40.0/80)) > 1e-9 {
		t.Fatalf("p50 %v", q)
	}
	if p.Drains != 0 || p.GoAwaySent != 0 || len(p.WorkerBusyNs) != 0 {
		t.Fatalf("a real Envoy's stats read as the emulator's own: %+v", p)
	}
}

func TestDeltaSeesRestart(t *testing.T) {
	pre := Pod{Name: "a", Present: true, CxHTTP2Total: 10, RqTotal: 500, WorkerCx: map[int]float64{0: 10}}
	post := Pod{Name: "a", Present: true, CxHTTP2Total: 14, RqTotal: 900, WorkerCx: map[int]float64{0: 14}}
	d, restarted := Delta(pre, post)
	if restarted || d.CxHTTP2Total != 4 || d.RqTotal != 400 || d.WorkerCx[0] != 4 {
		t.Fatalf("delta %+v restarted %v", d, restarted)
	}
	post.RqTotal = 30 // the pod restarted: counters began again from zero
	d, restarted = Delta(pre, post)
	if !restarted || d.RqTotal != 30 {
		t.Fatalf("after a restart: delta %+v restarted %v", d, restarted)
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	if _, err := ParseSnapshot("p", time.Now(), []byte("envoy_x{ 1 2 3\n")); err == nil || !strings.Contains(err.Error(), "pod p") {
		t.Fatalf("err = %v", err)
	}
}

func TestDiscoverWithoutGatewayStats(t *testing.T) {
	s, _ := ParseSnapshot("p", time.Now(), []byte("# TYPE envoy_server_live gauge\nenvoy_server_live 1\n"))
	if _, err := Discover([]Snapshot{s}, "httpbin"); err == nil || !strings.Contains(err.Error(), "proxyStatsMatcher") {
		t.Fatalf("err = %v", err)
	}
}

// A page rebuilt from a Prometheus query lists a histogram's buckets in the order the query
// returned the series, by the le label as text; the quantiles read them in bound order.
func TestHistogramBucketsInBoundOrder(t *testing.T) {
	page := "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 10\nh_bucket{le=\"1000\"} 10\nh_bucket{le=\"25\"} 5\nh_count 10\nh_sum 100\n"
	s, err := ParseSnapshot("p", time.Now(), []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	b := s.Histogram("h", nil)
	if q := b.Quantile(0.5); q != 25 {
		t.Errorf("p50 %v of buckets %v, want 25", q, b.Bounds)
	}
}
