package emulator

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// counter reads one counter from a pod's or ztunnel's Prometheus exposition.
func counter(t *testing.T, url, name string) float64 {
	t.Helper()
	fams, err := stats.Parse(strings.NewReader(get(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	if f := fams[name]; f != nil {
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func TestTLSListenerCountsAndBooksHandshakes(t *testing.T) {
	p := testPool(t, Config{Pods: 2, TLS: true}, stacks.Knobs{})
	cost := p.TLSHandshakeCost()
	if cost <= 0 || cost > 100*time.Millisecond {
		t.Fatalf("measured handshake cost %s", cost)
	}
	res, err := h2dial.Run(context.Background(), h2dial.Options{URL: "https://" + p.VIP() + "/get", Mode: h2dial.Distinct,
		Concurrency: 6, Duration: 300 * time.Millisecond, InsecureTLS: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.ConnectionsOpened != 6 {
		t.Fatalf("h2 over TLS: %d errors, %d connections", res.Errors, res.ConnectionsOpened)
	}
	var handshakes, busy float64
	for _, pod := range p.Pods() {
		if s := get(t, pod.AdminURL()+"/stats"); !strings.Contains(s, "listener.0.0.0.0_443.ssl.handshake: ") {
			t.Fatalf("/stats lacks the 443 listener's ssl.handshake")
		}
		handshakes += counter(t, pod.AdminURL()+"/stats/prometheus", "envoy_listener_ssl_handshake")
		for _, w := range pod.Workers() {
			busy += float64(w.Busy())
		}
	}
	if handshakes != 6 {
		t.Errorf("ssl.handshake = %v across pods, want 6", handshakes)
	}
	if min := 6 * float64(cost); busy < min {
		t.Errorf("workers were busy %v ns, less than six handshakes (%v ns)", busy, min)
	}

	// A cleartext h2c client cannot talk to a TLS listener; the pods count the failed handshake.
	_, _ = h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/get", Mode: h2dial.Distinct,
		Concurrency: 1, Duration: 100 * time.Millisecond, Timeout: time.Second})
	var sslErrs float64
	deadline := time.Now().Add(3 * time.Second)
	for sslErrs == 0 && time.Now().Before(deadline) {
		sslErrs = 0
		for _, pod := range p.Pods() {
			sslErrs += counter(t, pod.AdminURL()+"/stats/prometheus", "envoy_listener_ssl_connection_error")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sslErrs == 0 {
		t.Error("a cleartext client on the TLS listener left ssl.connection_error at 0")
	}
}

func TestZtunnelCountsBackendTraffic(t *testing.T) {
	p := testPool(t, Config{Pods: 2}, stacks.Knobs{})
	if len(p.Ztunnels()) != 2 {
		t.Fatalf("%d ztunnels, want one per httpbin replica", len(p.Ztunnels()))
	}
	res, err := h2dial.Run(context.Background(), h2dial.Options{URL: "http://" + p.VIP() + "/bytes/2048", Mode: h2dial.Distinct,
		Concurrency: 4, Duration: 300 * time.Millisecond})
	if err != nil || res.Requests == 0 {
		t.Fatalf("load: %v, %d requests", err, res.Requests)
	}
	var opened, sent, received float64
	for _, z := range p.Ztunnels() {
		if !strings.HasPrefix(z.Name, "ztunnel-") || len(z.Name) != len("ztunnel-")+5 {
			t.Errorf("ztunnel name %q", z.Name)
		}
		url := z.MetricsURL() + "/metrics"
		opened += counter(t, url, "istio_tcp_connections_opened_total")
		sent += counter(t, url, "istio_tcp_sent_bytes_total")
		received += counter(t, url, "istio_tcp_received_bytes_total")
	}
	if opened < 1 || sent < float64(res.Requests)*2048 || received <= 0 {
		t.Errorf("ztunnels saw %v connections, %v bytes sent, %v received for %d responses of 2 KiB", opened, sent, received, res.Requests)
	}
	resp, err := http.Get(p.Ztunnels()[0].MetricsURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("ztunnel /metrics content type %q", ct)
	}
}
