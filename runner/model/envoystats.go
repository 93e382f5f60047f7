package model

// The stats Envoy keeps for what the pools model, named and created in one place for the
// socket emulator's pods and the simulator's: a connection manager's, a listener's and its
// workers', an upstream cluster's, and the server's own.

import (
	"strconv"
	"sync"
	"time"
)

// HCMStats are a pod's HTTP connection manager stats (http.<prefix>;), its listener's, and
// the HTTP/2 codec's (http2.*).
type HCMStats struct {
	CxTotal, CxActive, CxHTTP2Total, CxHTTP2Active        *Stat
	CxHTTP1Total, CxHTTP1Active                           *Stat
	CxDestroy, CxDestroyLocal, CxDestroyRemote            *Stat
	CxDestroyLocalActiveRq, CxDestroyRemoteActiveRq       *Stat
	ProtocolErrors, DelayedCloseTimeout                   *Stat
	CxIdleTimeout, MaxRequestsReached, MaxDurationReached *Stat
	RqTotal, RqHTTP2, RqActive, RqIdleTimeout             *Stat
	RqMaxDuration                                         *Stat
	Rq2xx, Rq3xx, Rq4xx, Rq5xx                            *Stat
	RqTime, CxLength                                      *Stat
	RxBytes, TxBytes                                      *Stat
	DrainClose                                            *Stat
	// listener stats
	LCxTotal, LCxActive, LCxLength                           *Stat
	RqRxReset, RqTxReset, CxDestroyActiveRq, PrematureResets *Stat
	// codec stats (http2.*)
	RxReset, TxReset, Refused, RxMessagingError, GoAwayFinal, Trailers, HeaderOverflow *Stat
	OutboundFlood, OutboundControlFlood, InboundEmptyFlood, InboundPriorityFlood       *Stat
	InboundWindowUpdateFlood, TxFlushTimeout                                           *Stat
	// the lab's additions (igwlab.*): detail only, no call rests on them
	GoAwaySent, DrainStarted, JwtDenied, AccessLogged *Stat
}

// NewHCMStats creates them in st for the connection manager prefix and listener address.
func NewHCMStats(st *Store, px, la string) *HCMStats {
	s := &HCMStats{}
	c := func(name string) *Stat { return HCMStat(st, Counter, px, name) }
	g := func(name string) *Stat { return HCMStat(st, Gauge, px, name) }
	s.CxTotal, s.CxActive = c("downstream_cx_total"), g("downstream_cx_active")
	s.CxHTTP2Total, s.CxHTTP2Active = c("downstream_cx_http2_total"), g("downstream_cx_http2_active")
	s.CxHTTP1Total, s.CxHTTP1Active = c("downstream_cx_http1_total"), g("downstream_cx_http1_active")
	s.CxDestroy = c("downstream_cx_destroy")
	s.CxDestroyLocal, s.CxDestroyRemote = c("downstream_cx_destroy_local"), c("downstream_cx_destroy_remote")
	s.CxDestroyLocalActiveRq = c("downstream_cx_destroy_local_active_rq")
	s.CxDestroyRemoteActiveRq = c("downstream_cx_destroy_remote_active_rq")
	s.ProtocolErrors = c("downstream_cx_protocol_error")
	s.DelayedCloseTimeout = c("downstream_cx_delayed_close_timeout")
	s.DrainClose = c("downstream_cx_drain_close")
	s.CxIdleTimeout = c("downstream_cx_idle_timeout")
	s.MaxRequestsReached = c("downstream_cx_max_requests_reached")
	s.MaxDurationReached = c("downstream_cx_max_duration_reached")
	s.RqTotal, s.RqHTTP2, s.RqActive = c("downstream_rq_total"), c("downstream_rq_http2_total"), g("downstream_rq_active")
	s.RqIdleTimeout = c("downstream_rq_idle_timeout")
	s.RqMaxDuration = c("downstream_rq_max_duration_reached")
	s.Rq2xx, s.Rq3xx, s.Rq4xx, s.Rq5xx = c("downstream_rq_2xx"), c("downstream_rq_3xx"), c("downstream_rq_4xx"), c("downstream_rq_5xx")
	s.RqTime = HCMStat(st, Hist, px, "downstream_rq_time")
	s.CxLength = HCMStat(st, Hist, px, "downstream_cx_length_ms")
	s.RxBytes, s.TxBytes = c("downstream_cx_rx_bytes_total"), c("downstream_cx_tx_bytes_total")
	s.LCxTotal = ListenerStat(st, Counter, la, "downstream_cx_total")
	s.LCxActive = ListenerStat(st, Gauge, la, "downstream_cx_active")
	s.LCxLength = ListenerStat(st, Hist, la, "downstream_cx_length_ms")
	s.RxReset, s.TxReset = PlainStat(st, Counter, "http2.rx_reset"), PlainStat(st, Counter, "http2.tx_reset")
	s.Refused = PlainStat(st, Counter, "http2.stream_refused_errors")
	s.RxMessagingError = PlainStat(st, Counter, "http2.rx_messaging_error")
	s.Trailers = PlainStat(st, Counter, "http2.trailers")
	s.TxFlushTimeout = PlainStat(st, Counter, "http2.tx_flush_timeout")
	s.HeaderOverflow = PlainStat(st, Counter, "http2.header_overflow")
	s.OutboundFlood = PlainStat(st, Counter, "http2.outbound_flood")
	s.OutboundControlFlood = PlainStat(st, Counter, "http2.outbound_control_flood")
	s.InboundEmptyFlood = PlainStat(st, Counter, "http2.inbound_empty_frames_flood")
	s.InboundPriorityFlood = PlainStat(st, Counter, "http2.inbound_priority_frames_flood")
	s.InboundWindowUpdateFlood = PlainStat(st, Counter, "http2.inbound_window_update_frames_flood")
	s.RqRxReset, s.RqTxReset = c("downstream_rq_rx_reset"), c("downstream_rq_tx_reset")
	s.CxDestroyActiveRq = c("downstream_cx_destroy_active_rq")
	s.PrematureResets = c("downstream_rq_too_many_premature_resets")
	// Envoy counts only the final GOAWAY of a drain (ConnectionImpl::goAway), not the notice.
	s.GoAwayFinal = PlainStat(st, Counter, "http2.goaway_sent")
	s.GoAwaySent = LabStat(st, Counter, "goaway_sent")
	s.DrainStarted = LabStat(st, Counter, "drains_started")
	s.JwtDenied = LabStat(st, Counter, "jwt_denied")
	s.AccessLogged = LabStat(st, Counter, "access_log_entries")
	return s
}

// ClusterStats are an upstream cluster's stats (cluster.<name>;).
type ClusterStats struct {
	CxTotal, CxActive, CxConnectFail, CxOverflow                   *Stat
	RqTotal, RqActive, RqPendingTotal, RqPendingActive             *Stat
	RqPendingOverflow, Rq2xx, Rq4xx, Rq5xx                         *Stat
	PausedReading, ResumedReading, RxBuffered, TxBuffered, RxBytes *Stat
	RqTime                                                         *Stat
}

// NewClusterStats creates them in st for cluster name.
func NewClusterStats(st *Store, name string) *ClusterStats {
	c := &ClusterStats{}
	ct := func(n string) *Stat { return ClusterStat(st, Counter, name, n) }
	gg := func(n string) *Stat { return ClusterStat(st, Gauge, name, n) }
	c.CxTotal, c.CxActive = ct("upstream_cx_total"), gg("upstream_cx_active")
	c.CxConnectFail, c.CxOverflow = ct("upstream_cx_connect_fail"), ct("upstream_cx_overflow")
	c.RqTotal, c.RqActive = ct("upstream_rq_total"), gg("upstream_rq_active")
	c.RqPendingTotal, c.RqPendingActive = ct("upstream_rq_pending_total"), gg("upstream_rq_pending_active")
	c.RqPendingOverflow = ct("upstream_rq_pending_overflow")
	c.Rq2xx, c.Rq4xx, c.Rq5xx = ct("upstream_rq_2xx"), ct("upstream_rq_4xx"), ct("upstream_rq_5xx")
	c.PausedReading = ct("upstream_flow_control_paused_reading_total")
	c.ResumedReading = ct("upstream_flow_control_resumed_reading_total")
	c.RxBuffered, c.TxBuffered = gg("upstream_cx_rx_bytes_buffered"), gg("upstream_cx_tx_bytes_buffered")
	c.RxBytes = ct("upstream_cx_rx_bytes_total")
	c.RqTime = ClusterStat(st, Hist, name, "upstream_rq_time")
	return c
}

// ServerStats are the server's and the listener manager's stats a pod keeps.
type ServerStats struct {
	ListenerModified, ListenerInPlace, ListenersDraining, FilterChainsDraining *Stat
	Concurrency, Live, MemoryAllocated, Uptime                                 *Stat
}

// NewServerStats creates them in st for a server of workers workers.
func NewServerStats(st *Store, workers int) *ServerStats {
	s := &ServerStats{
		ListenerModified:     PlainStat(st, Counter, "listener_manager.listener_modified"),
		ListenerInPlace:      PlainStat(st, Counter, "listener_manager.listener_in_place_updated"),
		ListenersDraining:    PlainStat(st, Gauge, "listener_manager.total_listeners_draining"),
		FilterChainsDraining: PlainStat(st, Gauge, "listener_manager.total_filter_chains_draining"),
		Concurrency:          PlainStat(st, Gauge, "server.concurrency"),
		Live:                 PlainStat(st, Gauge, "server.live"),
		MemoryAllocated:      PlainStat(st, Gauge, "server.memory_allocated"),
		// server.uptime: seconds since this Envoy started (ServerImpl::flushStats sets it), so
		// a dashboard tells a young pod from an old one.
		Uptime: PlainStat(st, Gauge, "server.uptime"),
	}
	s.Concurrency.Set(int64(workers))
	return s
}

// WorkerStats are one worker's: its busy time (the lab's igwlab.worker_busy_ns, computed when
// read) and its listener connections (Istio has no tag for the worker id, so it stays in the
// name: envoy_listener_worker_0_downstream_cx_total).
type WorkerStats struct {
	BusyNs, CxTotal, CxActive *Stat
}

// NewWorkerStats creates them in st for worker id of the listener at addr, busy reading its
// busy time.
func NewWorkerStats(st *Store, addr string, id int, busy func() int64) *WorkerStats {
	s := &WorkerStats{BusyNs: LabStat(st, Counter, "worker_busy_ns", Label{Name: "worker", Value: strconv.Itoa(id)}),
		CxTotal:  WorkerStat(st, Counter, addr, id, "downstream_cx_total"),
		CxActive: WorkerStat(st, Gauge, addr, id, "downstream_cx_active")}
	s.BusyNs.SetRead(busy)
	return s
}

// Charge counts a response by its class as its headers are encoded (ActiveStream::encodeHeaders,
// chargeStats): a response never encoded is not counted.
func (s *HCMStats) Charge(status int) {
	switch {
	case status >= 500:
		s.Rq5xx.Inc()
	case status >= 400:
		s.Rq4xx.Inc()
	case status >= 300:
		s.Rq3xx.Inc()
	case status >= 200:
		s.Rq2xx.Inc()
	}
}

// LoopStats are a worker thread's own signals: the guard dog's per-thread counters, named
// after the thread (server.worker_<id>.watchdog_miss, watchdog_mega_miss: GuardDogImpl::
// WatchedDog; Istio's bootstrap tag "thread_name", regex ^server(\.(.+))\.watchdog, makes them
// envoy_server_watchdog_miss{thread_name="worker_0"}), and, where the bootstrap sets
// enable_dispatcher_stats, its dispatcher's histograms in microseconds under the listener
// manager's scope (listener_manager.worker_<id>.dispatcher.loop_duration_us, poll_delay_us:
// ListenerManagerImpl::startWorkers, WorkerImpl::initializeStats, DispatcherImpl::
// initializeStats; Istio extracts no tag from them). The guard dog's totals (workers.
// watchdog_miss) are not kept: Istio's default stats matcher drops them.
type LoopStats struct {
	Miss, MegaMiss          *Stat
	LoopDuration, PollDelay *Stat // nil without dispatcher stats
}

// NewLoopStats creates them in st for worker id.
func NewLoopStats(st *Store, id int, dispatcherStats bool) *LoopStats {
	w := "worker_" + strconv.Itoa(id)
	thread := []Label{{"thread_name", w}}
	s := &LoopStats{Miss: st.get(Counter, "server."+w+".watchdog_miss", "server.watchdog_miss", thread),
		MegaMiss: st.get(Counter, "server."+w+".watchdog_mega_miss", "server.watchdog_mega_miss", thread)}
	if dispatcherStats {
		s.LoopDuration = PlainStat(st, Hist, "listener_manager."+w+".dispatcher.loop_duration_us")
		s.PollDelay = PlainStat(st, Hist, "listener_manager."+w+".dispatcher.poll_delay_us")
	}
	return s
}

// WatchLoop gives worker id's queue q its event loop, from start, and the loop's signals in
// st; now is the pool's clock and lock (nil: none) what serialises q. Before anyone reads st the
// loop is brought up to now, so an idle worker's stats move as Envoy's do.
func WatchLoop(st *Store, id int, q *WorkerQ, start time.Time, dispatcherStats bool, now func() time.Time, lock sync.Locker) {
	s := NewLoopStats(st, id, dispatcherStats)
	q.SetLoop(NewEventLoop(start, 0, 0, s.LoopDuration, s.PollDelay))
	signals := func() (miss, megaMiss int64) {
		if lock != nil {
			lock.Lock()
			defer lock.Unlock()
		}
		t := now()
		l, running := q.LoopAt(t)
		return l.Misses(t, running)
	}
	s.Miss.SetRead(func() int64 { m, _ := signals(); return m })
	s.MegaMiss.SetRead(func() int64 { _, mm := signals(); return mm })
	st.BeforeRead(func() { signals() })
}
