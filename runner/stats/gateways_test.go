package stats

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/igwlab/igwlab/internal/testutil"
)

func readPage(t *testing.T, path string) Snapshot {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSnapshot(filepath.Base(path), time.Now(), raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// Every Envoy-based gateway's page is read by the role of its listeners: the connection
// manager that carries traffic and the listener it runs on, never the proxy's own stats or
// admin listener, and its workers' connections from Envoy's default worker_id tag.
func TestDiscoverAnyGateway(t *testing.T) {
	for _, c := range []struct {
		file, hcm, listener string
		workers             []float64
		concurrency         float64
	}{
		{"envoy-gateway.prom", "http-10080", "0.0.0.0_10080", []float64{210, 192}, 2},
		{"contour.prom", "ingress_https", "0.0.0.0_8443", []float64{335, 318, 336, 341}, 4},
		{"gloo.prom", "http", "[__]_8080", []float64{901, 120, 118, 122, 119, 117, 121, 115}, 8},
		{"emissary.prom", "ingress_http", "0.0.0.0_8080", []float64{0, 4, 2, 7}, 4},
		// The metrics listener took more connections than the service: the connection
		// manager it runs (envoy_prometheus_metrics) marks it as the proxy's own.
		{"consul.prom", "public_listener", "10.50.132.6_20000", []float64{50, 46}, 2},
	} {
		t.Run(c.file, func(t *testing.T) {
			s := readPage(t, filepath.Join("testdata", "gateways", c.file))
			n, err := DiscoverAny([]Snapshot{s}, Pick{})
			if err != nil {
				t.Fatal(err)
			}
			if n.HCMPrefix != c.hcm || n.Listener != c.listener {
				t.Fatalf("discovered %+v, want connection manager %s on listener %s", n, c.hcm, c.listener)
			}
			p := Extract(s, n)
			if len(p.WorkerCx) != len(c.workers) {
				t.Fatalf("workers %v, want %v", p.WorkerCx, c.workers)
			}
			var total float64
			for i, want := range c.workers {
				if p.WorkerCx[i] != want {
					t.Errorf("worker_%d: %v connections, want %v", i, p.WorkerCx[i], want)
				}
				total += want
			}
			if p.LCxTotal != total || p.Concurrency != c.concurrency {
				t.Errorf("listener connections %v (its workers' sum %v), concurrency %v want %v", p.LCxTotal, total, p.Concurrency, c.concurrency)
			}
		})
	}
}

// A name given with Pick wins over discovery, and one the page does not have is an error that
// lists what it has.
func TestDiscoverAnyPick(t *testing.T) {
	s := readPage(t, filepath.Join("testdata", "gateways", "contour.prom"))
	n, err := DiscoverAny([]Snapshot{s}, Pick{HCMPrefix: "ingress_http", Listener: "0.0.0.0_8080"})
	if err != nil || n.HCMPrefix != "ingress_http" || n.Listener != "0.0.0.0_8080" {
		t.Fatalf("picked %+v, %v", n, err)
	}
	if _, err := DiscoverAny([]Snapshot{s}, Pick{HCMPrefix: "ingress_htp"}); err == nil || err.Error() != `no HTTP connection manager with the stat prefix "ingress_htp" in the stats (there are: ingress_http, ingress_https, stats)` {
		t.Errorf("a misspelt prefix: %v", err)
	}
	if _, err := DiscoverAny([]Snapshot{s}, Pick{Listener: "0.0.0.0_80"}); err == nil || err.Error() != `no listener "0.0.0.0_80" in the stats (there are: 0.0.0.0_8002, 0.0.0.0_8080, 0.0.0.0_8443)` {
		t.Errorf("a listener that is not there: %v", err)
	}
}

// The pages other people published: a Consul sidecar under traffic whose public listener is a
// TCP proxy (no connection manager of its own), and an idle plain Envoy with 16 workers.
func TestDiscoverAnyRealPages(t *testing.T) {
	consul := readPage(t, testutil.RealFixture(t, "envoy-consul-dataplane-sidecar-2workers-stats-prometheus-netdata.txt"))
	n, err := DiscoverAny([]Snapshot{consul}, Pick{})
	if err != nil || n.HCMPrefix != "" || n.Listener != "10.50.132.6_20000" {
		t.Fatalf("consul: %+v, %v", n, err)
	}
	if p := Extract(consul, n); p.WorkerCx[0] != 3169 || p.WorkerCx[1] != 3338 || p.LCxTotal != 6507 || p.Concurrency != 2 {
		t.Errorf("consul: workers %v, listener connections %v, concurrency %v", p.WorkerCx, p.LCxTotal, p.Concurrency)
	}
	plain := readPage(t, testutil.RealFixture(t, "envoy-1.2x-plain-16workers-stats-prometheus-netdata.txt"))
	n, err = DiscoverAny([]Snapshot{plain}, Pick{})
	if err != nil || n.HCMPrefix != "ingress_http" || n.Listener != "0.0.0.0_10000" {
		t.Fatalf("plain Envoy: %+v, %v", n, err)
	}
	if p := Extract(plain, n); len(p.WorkerCx) != 16 || p.Concurrency != 16 {
		t.Errorf("plain Envoy: workers %v, concurrency %v", p.WorkerCx, p.Concurrency)
	}
}
