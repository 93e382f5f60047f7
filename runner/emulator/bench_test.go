package emulator

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/stacks"
)

// BenchmarkRequestPath times one request through the emulator's whole path, over one client
// connection with 32 streams in flight: L4 balancer, HTTP/2 server, worker clock (1 us of
// emulated service), upstream pool, go-httpbin (/status/200) behind its ztunnel, and back. The
// client's own cost is included; ns/op is wall time per request on this machine.
func BenchmarkRequestPath(b *testing.B) {
	p := testPool(&testing.T{}, Config{Pods: 1, Workers: 1, Model: Model{ServiceTime: time.Microsecond}}, stacks.Knobs{})
	defer p.Close()
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := "http://" + p.VIP() + "/status/200"
	b.SetParallelism(16) // 32 goroutines on two cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
