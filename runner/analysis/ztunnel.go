package analysis

import (
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// ZtunnelTier is what the node proxies did in a window: the tunnels they opened, the HBONE
// connections their pools opened for them, and, where threads are measured, the hottest
// runtime thread's busy share. Thread shares matter because ztunnel runs a fixed number of
// threads (two before istio/ztunnel#1993) and relays each HBONE connection's bytes on one
// task at a time (runner/model/tokio.go).
type ZtunnelTier struct {
	Tunnels float64 `json:"tunnels"`
	// HBONEConnections are the HBONE connections open at the window's end (the pool reuses
	// them across windows), HBONEOpened those opened in it.
	HBONEConnections float64 `json:"hbone_connections"`
	HBONEOpened      float64 `json:"hbone_opened"`
	// Threads is the runtime threads of the busiest ztunnel; HotThreadBusy its hottest
	// thread's share of the window, HotThreadOf which ztunnel and thread that is.
	Threads       int     `json:"threads,omitempty"`
	HotThreadBusy float64 `json:"hot_thread_busy,omitempty"`
	HotThreadOf   string  `json:"hot_thread_of,omitempty"`
	// MeanThreadBusy is that ztunnel's threads' mean share; times Threads, the cores its data
	// plane kept busy (CoresUsed).
	MeanThreadBusy float64 `json:"mean_thread_busy,omitempty"`
}

// CoresUsed is the busiest ztunnel's data-plane work over the window, in cores.
func (z ZtunnelTier) CoresUsed() float64 { return z.MeanThreadBusy * float64(z.Threads) }

// ztunnelTier reads the ztunnels' deltas over a window (matched by name); nil without any.
func ztunnelTier(pre, post []stats.Ztunnel, window time.Duration) *ZtunnelTier {
	if len(post) == 0 {
		return nil
	}
	before := map[string]stats.Ztunnel{}
	for _, z := range pre {
		before[z.Name] = z
	}
	t := &ZtunnelTier{}
	for _, z := range post {
		b := before[z.Name]
		t.Tunnels += z.Tunnels - b.Tunnels
		t.HBONEOpened += z.HBONEOpened - b.HBONEOpened
		t.HBONEConnections += z.HBONEActive
		if window <= 0 || len(z.ThreadBusyS) == 0 {
			continue
		}
		var sum, hot float64
		hotAt := 0
		for i, s := range z.ThreadBusyS {
			d := s
			if len(b.ThreadBusyS) == len(z.ThreadBusyS) { // else the ztunnel restarted: counters from zero
				d -= b.ThreadBusyS[i]
			}
			share := max(0, d) / window.Seconds()
			sum += share
			if share > hot {
				hot, hotAt = share, i
			}
		}
		if hot > t.HotThreadBusy || t.HotThreadOf == "" {
			t.HotThreadBusy, t.HotThreadOf = hot, fmt.Sprintf("%s thread %d", z.Name, hotAt)
			t.Threads, t.MeanThreadBusy = len(z.ThreadBusyS), sum/float64(len(z.ThreadBusyS))
		}
	}
	return t
}
