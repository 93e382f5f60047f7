package emulator

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/igwlab/igwlab/runner/model"
)

// The gateway pods' node: its kubelet's /metrics/cadvisor for their istio-proxy containers
// (model.CAdvisor), which the runner reads as it reads a cluster's kubelets.

// Kubelet labels of the gateway's containers.
const (
	GatewayNamespace = model.GatewayNamespace
	ProxyContainer   = model.ProxyContainer
	// NodeName is the node the local gateway pods run on.
	NodeName = "igwlab-local"
)

type kubelet struct {
	srv *http.Server
	ln  net.Listener
}

func (p *Pool) startKubelet() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(model.CAdvisor{Containers: p.containers, Now: time.Now})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics/cadvisor", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	p.kubelet = &kubelet{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = p.kubelet.srv.Serve(ln) }()
	return nil
}

func (k *kubelet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = k.srv.Shutdown(ctx)
}

// KubeletURL is the base URL of the gateway pods' node's kubelet (its /metrics/cadvisor).
func (p *Pool) KubeletURL() string { return "http://" + p.kubelet.ln.Addr().String() }

// containers are the gateway pods' running istio-proxy containers.
func (p *Pool) containers() []model.Container {
	var out []model.Container
	for _, pod := range p.gateway {
		if !pod.Up() {
			continue // no container: cAdvisor has no cgroup to read
		}
		pod.mu.Lock()
		ws, q := pod.workers, pod.quota
		pod.mu.Unlock()
		var busy time.Duration
		for _, w := range ws {
			busy += w.Busy()
		}
		out = append(out, model.Container{Pod: pod.Name, Busy: busy, Quota: q})
	}
	return out
}
