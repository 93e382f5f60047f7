package measure

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/stats"
)

// writeScenarioResults writes the per-scenario files: cv.txt, worker_cv_per_pod.txt, the
// lab's per-pod files ("<pod> <value>"), waypoint_cv.txt and result.json.
func WriteScenarioResults(dir string, a *analysis.Result, in *analysis.Input, ew *Errs) {
	var cv strings.Builder
	// The first five lines keep the lab's order: connection CV, active CV, worker CV mean and
	// max, p99; the rest are additions.
	fmt.Fprintf(&cv, "cv_cx_http2_total %.3f\n", a.CV)
	fmt.Fprintf(&cv, "cv_cx_active %.3f\n", a.CVActive)
	fmt.Fprintf(&cv, "worker_cv_mean %.3f\n", a.WorkerCVMean)
	fmt.Fprintf(&cv, "worker_cv_max %.3f\n", a.WorkerCVMax)
	if a.P99Ms > 0 {
		fmt.Fprintf(&cv, "p99 %.6fs\n", a.P99Ms/1000)
	} else {
		fmt.Fprintf(&cv, "p99 n/a\n")
	}
	fmt.Fprintf(&cv, "connections_total %d\n", int(a.ConnectionsTotal))
	if b := a.Chance; b != nil {
		fmt.Fprintf(&cv, "chance k=%d n=%d median %.3f band [%.3f, %.3f] -> %s (p=%.3g)\n", b.K, b.N, b.Median, b.Lo, b.Hi, a.ChanceVerdict, a.ChanceP)
	}
	fmt.Fprintf(&cv, "cv_requests %.3f\n", a.CVRequests)
	if _, ok := a.Busy(); ok {
		fmt.Fprintf(&cv, "busy_max %.3f %s\n", a.BusyMax, a.HotWorker)
		fmt.Fprintf(&cv, "busy_mean %.3f\n", a.BusyMean)
	} else {
		fmt.Fprintf(&cv, "busy_max n/a (Envoy exports no per-worker busy time)\n")
	}
	fmt.Fprintf(&cv, "goaways %d\n", int(a.GoAways))
	ew.Add(WriteFile(filepath.Join(dir, "cv.txt"), []byte(cv.String())))
	ew.Add(WritePerPod(filepath.Join(dir, "worker_cv_per_pod.txt"), a.WorkerCV))

	pre := map[string]stats.Pod{}
	for _, p := range in.Pre {
		pre[p.Name] = p
	}
	files := map[string]map[string]float64{}
	put := func(file, pod string, v float64) {
		if files[file] == nil {
			files[file] = map[string]float64{}
		}
		files[file][pod] = v
	}
	var lengths strings.Builder
	for _, post := range in.Post {
		d, _ := stats.Delta(pre[post.Name], post)
		n := post.Name
		put("cx_active_per_pod.txt", n, post.CxActive)
		put("cx_http2_total_per_pod.txt", n, d.CxHTTP2Total)
		put("rq_active_per_pod.txt", n, post.RqActive)
		put("rq_total_per_pod.txt", n, d.RqTotal)
		put("cx_max_duration_reached.txt", n, d.MaxDurationReached)
		put("cx_max_requests_reached.txt", n, d.MaxRequestsReached)
		put("downstream_rq_idle_timeout.txt", n, d.RqIdleTimeout)
		put("downstream_cx_idle_timeout.txt", n, d.CxIdleTimeout)
		put("downstream_cx_drain_close.txt", n, d.DrainClose)
		put("upstream_rq_pending_active.txt", n, post.PendingActive)
		put("upstream_rq_pending_overflow.txt", n, d.PendingOverflow)
		put("upstream_cx_overflow.txt", n, d.CxOverflow)
		put("flow_control_paused.txt", n, d.Paused)
		put("upstream_cx_rx_bytes_buffered.txt", n, post.RxBuffered)
		put("upstream_cx_tx_bytes_buffered.txt", n, post.TxBuffered)
		put("ssl_handshake.txt", n, d.SSLHandshake)
		fmt.Fprintf(&lengths, "%s p50=%s p99=%s count=%d\n", n, msText(d.RqTime.Quantile(0.5)), msText(d.RqTime.Quantile(0.99)), int(d.RqTime.Count))
	}
	for file, vals := range files {
		ew.Add(WritePerPod(filepath.Join(dir, file), vals))
	}
	ew.Add(WriteFile(filepath.Join(dir, "rq_time_per_pod.txt"), []byte(lengths.String())))
	if w := a.Waypoint; w != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "WAYPOINT_CV=%.6f\nWAYPOINT_TOTAL_CONNS=%d\nWAYPOINT_PODS=%d\n", w.CV, int(w.ConnectionsTotal), len(w.Connections))
		fmt.Fprintf(&b, "WAYPOINT_WORKER_CV_MEAN=%.6f\nWAYPOINT_BUSY_MAX=%.6f\n", w.WorkerCVMean, w.BusyMax)
		ew.Add(WriteFile(filepath.Join(dir, "waypoint_cv.txt"), []byte(b.String())))
	}
	ew.Add(WriteJSON(filepath.Join(dir, "result.json"), a))
}

func msText(v float64) string {
	if v != v { // NaN: no samples
		return "n/a"
	}
	return fmt.Sprintf("%.2fms", v)
}
