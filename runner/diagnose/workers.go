package diagnose

import (
	"fmt"

	"github.com/igwlab/igwlab/runner/analysis"
)

// One pod read leaves no spread over pods to judge, but one over its workers: Envoy hands each
// accepted connection to one worker for life (the kernel's SO_REUSEPORT hash of the 4-tuple on
// a listener with one socket per worker, Envoy's default on Linux; otherwise whichever worker's
// accept wins; with exact_balance the worker with the fewest: source/common/network/
// connection_balancer_impl.cc, ExactConnectionBalancerImpl::pickTargetHandler) and counts it in
// listener.<address>.worker_<N>.downstream_cx_total (source/server/active_listener_base.h,
// LISTENER_STATS / PER_HANDLER_LISTENER_STATS). Random placement of k connections over W
// workers is the same chance model as over pods.

// minWorkerConnections is the fewest connections on one pod's workers that say anything about
// how they spread.
const minWorkerConnections = 20

// judgeWorkers gives a single pod's verdict on its workers' connections; false when the pod
// has no per-worker stats over two or more workers.
func judgeWorkers(r *Report, w *Window) bool {
	if len(w.Pods) != 1 {
		return false
	}
	p, row := w.Pods[0], &r.Pods[0]
	counts := values(p.Delta.WorkerCx)
	for len(counts) < p.Workers && len(counts) > 0 {
		counts = append(counts, 0) // a worker with no series took no connection on this listener
	}
	if len(counts) < 2 {
		return false
	}
	row.WorkerConns = counts
	k := sum(counts)
	when := w.period()
	if k < minWorkerConnections {
		r.Verdict = NotEnoughData
		r.Summary = fmt.Sprintf("one pod read; its %d workers took %d connection(s) on listener %s %s: too few to say how they spread (at least %d)",
			len(counts), int(k), w.Names.Listener, when, minWorkerConnections)
		return true
	}
	cv := analysis.CV(counts)
	band := analysis.Chance(int(k), len(counts))
	r.Chance, r.CVConnections = band, cv
	r.ChanceVerdict, _ = band.Judge(cv)
	hot := argmax(counts)
	r.HotPod, r.HotPart = p.Name, counts[hot]/k
	r.Verdict = AsChance
	if r.ChanceVerdict == analysis.MoreConcentrated {
		r.Verdict = BeyondChance
	}
	r.Summary = fmt.Sprintf("one pod read, judged over its %d workers: they took %d connections on listener %s %s, worker CV %.3f (%s; %s); worker_%d took %.0f%% of them",
		len(counts), int(k), w.Names.Listener, when, cv, r.ChanceVerdict, band.Over("workers"), hot, 100*r.HotPart)
	switch {
	case r.Verdict != BeyondChance:
	case exact(w.InForce):
		r.Lever = &Lever{Why: "exact_balance is in force and the workers still took uneven shares: look at how long the connections live (a worker keeps a connection for life) rather than at how they were placed"}
	default:
		r.Lever = &Lever{Knob: knobExact, Value: "{}", Why: "the pod's workers took connections more unevenly than random placement would: exact_balance hands each new connection to the worker with the fewest (at the cost of a lock on each accept); it does nothing between pods"}
		setPatch(r.Lever, w, "gateway-workers", map[string]string{r.Lever.Knob: r.Lever.Value}, "")
	}
	return true
}
