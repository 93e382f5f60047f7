package stats

import (
	"slices"
	"strconv"
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
	// ThreadBusyS is each runtime thread's work in seconds, by thread index (nil: not measured).
	ThreadBusyS []float64 `json:"thread_busy_s,omitempty"`
	// HBONEOpened are the HBONE connections its outbound pool opened, HBONEActive those open
	// (0: not measured). The pool keeps a connection for minutes after its last tunnel and
	// reuses it, so a window's tunnels may open none: what carried them is what is open.
	HBONEOpened float64 `json:"hbone_opened,omitempty"`
	HBONEActive float64 `json:"hbone_active,omitempty"`
}

// Names of the lab's own ztunnel metrics (the local pool's): ztunnel exports no per-thread
// time nor pool counts.
const (
	ZtunnelThreadBusy  = "igwlab_ztunnel_thread_busy_seconds_total"
	ZtunnelHBONEOpened = "igwlab_ztunnel_hbone_connections_opened_total"
	ZtunnelHBONEActive = "igwlab_ztunnel_hbone_connections_active"
)

// ExtractZtunnel reads a ztunnel's page.
func ExtractZtunnel(name string, s Snapshot) Ztunnel {
	src := Labels{"reporter": "source"}
	opened := s.Sum("istio_tcp_connections_opened_total", src)
	z := Ztunnel{Name: name, Tunnels: opened, TunnelsOpen: opened - s.Sum("istio_tcp_connections_closed_total", src),
		HBONEOpened: s.Sum(ZtunnelHBONEOpened, nil), HBONEActive: s.Sum(ZtunnelHBONEActive, nil)}
	byThread := s.LabelValues(ZtunnelThreadBusy, "thread")
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
