package sim

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/igwlab/igwlab/runner/model"
)

// A simulated pod's Envoy admin is the socket emulator's (model.Admin), answered in process at
// the virtual time: nothing listens, and the pool stands still while a page is rendered.

// NodeName is the node the simulated gateway pods run on (its kubelet's cAdvisor page).
const NodeName = "igwlab-sim"

// version is the simulated pods' /server_info version.
const version = "igwlab-sim (models Envoy's HTTP/2 server with Istio's gateway)"

// ip is the pod's address as its node id and /listeners show it.
func (pod *Pod) ip() string {
	if pod.role == roleWaypoint {
		return fmt.Sprintf("10.42.1.%d", 10+pod.slot)
	}
	return fmt.Sprintf("10.42.%d.%d", 2+pod.slot/200, 10+pod.slot%200)
}

// handler is the pod's admin API as it stands: its stats are the running Envoy's (a restarted
// container's from zero).
func (pod *Pod) handler() http.Handler {
	p := pod.pool
	port := 8080
	if pod.role == roleWaypoint {
		port = 15008
	}
	return model.Admin(model.AdminView{Name: pod.Name, IP: pod.ip(), Store: pod.store,
		Listener: func() *model.Listener { return pod.cfg }, ListenerName: pod.listenerAddr(), Prefix: pod.prefix(),
		Addr: func() string { return fmt.Sprintf("%s:%d", pod.ip(), port) }, Workers: len(pod.workers),
		Started: p.Sim.TimeOf(pod.started), Now: p.Sim.Now, Version: version,
		Draining: func() bool { return !pod.up || pod.terminating },
		Clusters: func() []model.ClusterView {
			var out []model.ClusterView
			for _, name := range []string{clusterGRPC, clusterHTTPBin, clusterWaypoint} {
				if c, ok := pod.clusters[name]; ok {
					out = append(out, model.ClusterView{Name: name, Addr: "10.43.0.20:8080", Stats: c})
				}
			}
			return out
		}})
}

// Admin answers GET path on the pod's admin, as of the virtual time. A pod whose container is
// down answers nothing, as a real one's admin port refuses the connection.
func (pod *Pod) Admin(path string) ([]byte, error) {
	if !pod.up {
		return nil, fmt.Errorf("pod %s: connection refused (its container is down)", pod.Name)
	}
	return serve(pod.handler(), path)
}

// serve runs one GET through a handler.
func serve(h http.Handler, path string) ([]byte, error) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes(), nil
}

// Kubelet answers GET path on the gateway pods' node's kubelet: cAdvisor's page for their
// running istio-proxy containers (model.CAdvisor).
func (p *Pool) Kubelet(path string) ([]byte, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(model.CAdvisor{Containers: p.containers, Now: p.Sim.Now})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics/cadvisor", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return serve(mux, path)
}

// containers are the gateway pods' running istio-proxy containers.
func (p *Pool) containers() []model.Container {
	var out []model.Container
	for _, pod := range p.gateway {
		if pod.exists && pod.up {
			out = append(out, model.Container{Pod: pod.Name, Busy: pod.busy(), Quota: pod.quota})
		}
	}
	return out
}
