package stats

import (
	"slices"
	"strconv"
	"strings"
)

// Ztunnel is what one ztunnel's metrics page (:15020/metrics) says of its load: the
// connections it carried in tunnels (istio_tcp_connections_opened_total from the source's
// side), and, where the target measures them (the local pool), each runtime thread's work
// and the HBONE connections its outbound pool opened.
type Ztunnel struct {
	Name string `json:"name"`
	// Tunnels are the connections it opened as the source's proxy, TunnelsOpen those still
	// open.
	Tunnels     float64 `json:"tunnels"`
	TunnelsOpen float64 `json:"tunnels_open"`
	// ThreadBusyS is each runtime thread's busy time in seconds, by worker index (nil: not
	// exported, as before ztunnel 1.30).
	ThreadBusyS []float64 `json:"thread_busy_s,omitempty"`
	// HBONEOpened are the HBONE connections its outbound pool opened, HBONEActive those open
	// (0: not measured). The pool keeps a connection for minutes after its last tunnel and
	// reuses it, so a window's tunnels may open none: what carried them is what is open.
	HBONEOpened float64 `json:"hbone_opened,omitempty"`
	HBONEActive float64 `json:"hbone_active,omitempty"`
}

// ztunnel's data-plane runtime metrics (src/metrics/tokio_runtime.rs, TokioRuntimeCollector,
// istio/ztunnel#1791, in ztunnel from 1.30): each worker thread's busy time as a counter with
// a worker label, and the thread count. The prometheus-client crate writes a counter's samples
// with _total; both spellings are read. ztunnel exports nothing of its pool: the HBONE
// connection counts are the lab's own (the local pool's).
const (
	ZtunnelThreadBusy  = "tokio_worker_total_busy_duration_seconds_total"
	ZtunnelWorkers     = "tokio_num_workers"
	ZtunnelHBONEOpened = "igwlab_ztunnel_hbone_connections_opened_total"
	ZtunnelHBONEActive = "igwlab_ztunnel_hbone_connections_active"
)

// ExtractZtunnel reads a ztunnel's page.
func ExtractZtunnel(name string, s Snapshot) Ztunnel {
	src := Labels{"reporter": "source"}
	opened := s.Sum("istio_tcp_connections_opened_total", src)
	z := Ztunnel{Name: name, Tunnels: opened, TunnelsOpen: opened - s.Sum("istio_tcp_connections_closed_total", src),
		HBONEOpened: s.Sum(ZtunnelHBONEOpened, nil), HBONEActive: s.Sum(ZtunnelHBONEActive, nil)}
	byThread := s.LabelValues(ZtunnelThreadBusy, "worker")
	if len(byThread) == 0 {
		byThread = s.LabelValues(strings.TrimSuffix(ZtunnelThreadBusy, "_total"), "worker")
	}
	var ids []int
	for k := range byThread {
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < 1024 {
			ids = append(ids, i)
		}
	}
	if len(ids) > 0 {
		z.ThreadBusyS = make([]float64, slices.Max(ids)+1)
		for _, i := range ids {
			z.ThreadBusyS[i] = byThread[strconv.Itoa(i)]
		}
	}
	return z
}
