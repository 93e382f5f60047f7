package emulator

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// adminServer is a pod's Envoy admin endpoint (Istio's :15000, with :15090's /stats/prometheus).
type adminServer struct {
	srv *http.Server
	ln  net.Listener
}

// startAdmin serves the admin API (model.Admin) on the pod's address; port 0 picks one.
func (p *Pod) startAdmin(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("pod %s admin: %w", p.Name, err)
	}
	p.mu.Lock()
	store, workers, started := p.store, len(p.workers), p.started
	p.mu.Unlock()
	h := model.Admin(model.AdminView{Name: p.Name, IP: p.ip, Store: store, Listener: p.cfg.Load,
		ListenerName: p.listenerAddr, Prefix: p.hcmPrefix, Addr: p.Addr, Workers: workers,
		Started: started, Now: time.Now, Version: "igwlab-emulator (models Envoy 1.35 / Istio 1.27)",
		Draining: func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return !p.up || p.terminating
		},
		Clusters: func() []model.ClusterView {
			var out []model.ClusterView
			for _, k := range slices.Sorted(maps.Keys(p.clusters)) {
				c := p.clusters[k]
				out = append(out, model.ClusterView{Name: c.name, Addr: c.addr, Stats: c.ClusterStats})
			}
			return out
		}})
	a := &adminServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	p.mu.Lock()
	p.admin, p.adminPort = a, ln.Addr().(*net.TCPAddr).Port
	p.mu.Unlock()
	go func() { _ = a.srv.Serve(ln) }()
	return nil
}

func (p *Pod) stopAdmin() {
	p.mu.Lock()
	a := p.admin
	p.admin = nil
	p.mu.Unlock()
	if a != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = a.srv.Shutdown(ctx)
	}
}
