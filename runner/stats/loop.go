package stats

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WorkerLoop is one worker thread's own signals: the guard dog's misses on it and, where the
// bootstrap sets enable_dispatcher_stats, its event loop's histograms (microseconds).
//
// Envoy names them server.worker_<N>.watchdog_miss and _mega_miss (GuardDogImpl's WatchedDog)
// and listener_manager.worker_<N>.dispatcher.loop_duration_us and poll_delay_us
// (ListenerManagerImpl::startWorkers, DispatcherImpl::initializeStats). Under Istio's bootstrap
// the thread becomes a tag (thread_name, regex ^server(\.(.+))\.watchdog) and the dispatcher's
// keep the worker in the name; under Envoy's default tags the watchdog's keep it in the name
// and the dispatcher's lose it to envoy_worker_id (listener_manager.(worker_<id>.)).
type WorkerLoop struct {
	Miss         float64 `json:"watchdog_miss"`
	MegaMiss     float64 `json:"watchdog_mega_miss"`
	LoopDuration Buckets `json:"-"`
	PollDelay    Buckets `json:"-"`
}

// Dispatcher reports whether the worker's dispatcher histograms were exported.
func (w WorkerLoop) Dispatcher() bool { return len(w.LoopDuration.Bounds) > 0 }

// WorkerLoops reads every worker's signals from a snapshot (nil when it has none).
func (s Snapshot) WorkerLoops() map[int]WorkerLoop {
	out := map[int]WorkerLoop{}
	set := func(id int, f func(*WorkerLoop)) {
		w := out[id]
		f(&w)
		out[id] = w
	}
	for name, f := range s.Families {
		switch name {
		case "envoy_server_watchdog_miss", "envoy_server_watchdog_mega_miss":
			for _, m := range f.GetMetric() {
				for _, lp := range m.GetLabel() {
					id, ok := threadWorker(lp.GetName(), lp.GetValue(), "thread_name")
					if ok {
						v := m.GetCounter().GetValue()
						set(id, func(w *WorkerLoop) { *pick(w, name) = v })
					}
				}
			}
			continue
		case "envoy_listener_manager_dispatcher_loop_duration_us", "envoy_listener_manager_dispatcher_poll_delay_us":
			for _, m := range f.GetMetric() {
				for _, lp := range m.GetLabel() {
					if id, ok := threadWorker(lp.GetName(), lp.GetValue(), "envoy_worker_id"); ok {
						b := s.Histogram(name, Labels{"envoy_worker_id": lp.GetValue()})
						set(id, func(w *WorkerLoop) { *hist(w, name) = b })
					}
				}
			}
			continue
		}
		if rest, ok := strings.CutPrefix(name, "envoy_server_worker_"); ok {
			id, stat, _ := strings.Cut(rest, "_")
			if n, ok := workerID(id); ok && (stat == "watchdog_miss" || stat == "watchdog_mega_miss") {
				v := s.Sum(name, nil)
				set(n, func(w *WorkerLoop) { *pick(w, "envoy_server_"+stat) = v })
			}
		}
		if rest, ok := strings.CutPrefix(name, "envoy_listener_manager_worker_"); ok {
			id, stat, _ := strings.Cut(rest, "_")
			if n, ok := workerID(id); ok && (stat == "dispatcher_loop_duration_us" || stat == "dispatcher_poll_delay_us") {
				b := s.Histogram(name, nil)
				set(n, func(w *WorkerLoop) { *hist(w, "envoy_listener_manager_"+stat) = b })
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func pick(w *WorkerLoop, name string) *float64 {
	if strings.HasSuffix(name, "mega_miss") {
		return &w.MegaMiss
	}
	return &w.Miss
}

func hist(w *WorkerLoop, name string) *Buckets {
	if strings.HasSuffix(name, "poll_delay_us") {
		return &w.PollDelay
	}
	return &w.LoopDuration
}

// threadWorker reads a worker id from a thread tag: thread_name="worker_3", or
// envoy_worker_id="3" (or "worker_3").
func threadWorker(label, value, want string) (int, bool) {
	if label != want {
		return 0, false
	}
	v, named := strings.CutPrefix(value, "worker_")
	if !named && label == "thread_name" {
		return 0, false // main_thread
	}
	return workerID(v)
}

// subLoops is post's signals less pre's: counters and histograms over the window.
func subLoops(pre, post map[int]WorkerLoop, restarted *bool) map[int]WorkerLoop {
	if post == nil {
		return nil
	}
	out := make(map[int]WorkerLoop, len(post))
	for id, b := range post {
		a := pre[id]
		if b.Miss < a.Miss || b.MegaMiss < a.MegaMiss {
			*restarted = true
			out[id] = b
			continue
		}
		out[id] = WorkerLoop{Miss: b.Miss - a.Miss, MegaMiss: b.MegaMiss - a.MegaMiss,
			LoopDuration: b.LoopDuration.Sub(a.LoopDuration), PollDelay: b.PollDelay.Sub(a.PollDelay)}
	}
	return out
}

// WorkerName is how the reports name a worker thread.
func WorkerName(id int) string { return "worker_" + strconv.Itoa(id) }

// LoopRow is one worker's event loop over a window, from its own stats.
type LoopRow struct {
	Pod    string `json:"pod"`
	Worker int    `json:"worker"`
	// Busy is the share of the window the loop spent running callbacks: the sum of its
	// iterations (loop_duration_us measures each from the poll's return to the next poll), over
	// the window. -1 without dispatcher stats.
	Busy float64 `json:"busy"`
	// LoopP99 and PollP99 are its iterations' and poll delays' p99 in milliseconds (-1 without
	// dispatcher stats).
	LoopP99  float64 `json:"loop_p99_ms"`
	PollP99  float64 `json:"poll_delay_p99_ms"`
	Miss     float64 `json:"watchdog_miss"`
	MegaMiss float64 `json:"watchdog_mega_miss"`
}

// Pegged is the busy share of a loop at which the worker is saturated: it waits for nothing.
const Pegged = 0.9

// pegged says whether the loop ran callbacks for (about) the whole window: an iteration is
// recorded as it ends, so the one under way as the window closes is missing from the sum, and
// the loop's long iterations (p99) are allowed for.
func (r LoopRow) pegged(span time.Duration) bool {
	return r.Busy >= 0 && r.Busy+r.LoopP99/float64(span.Milliseconds()) >= Pegged
}

// LoopRows lists every worker's loop over a window of span, from each pod's window (Delta),
// hottest first: by busy share, then by watchdog misses. Nil when no pod exports the signals.
func LoopRows(pods []Pod, span time.Duration) []LoopRow {
	var out []LoopRow
	for _, p := range pods {
		for id, l := range p.Loops {
			r := LoopRow{Pod: p.Name, Worker: id, Busy: -1, LoopP99: -1, PollP99: -1, Miss: l.Miss, MegaMiss: l.MegaMiss}
			if l.Dispatcher() && span > 0 {
				r.Busy = l.LoopDuration.Sum / float64(span.Microseconds())
				r.LoopP99 = quantileMs(l.LoopDuration)
				r.PollP99 = quantileMs(l.PollDelay)
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Busy != b.Busy:
			return a.Busy > b.Busy
		case a.Miss != b.Miss:
			return a.Miss > b.Miss
		case a.Pod != b.Pod:
			return a.Pod < b.Pod
		}
		return a.Worker < b.Worker
	})
	return out
}

func quantileMs(b Buckets) float64 {
	q := b.Quantile(0.99)
	if math.IsNaN(q) {
		return 0
	}
	return q / 1000
}

// LoopEvidence says what the workers' own stats over a window of span show of the hottest one:
// its busy share and iterations against the other workers', and any watchdog misses. pegged
// is true when the hottest worker's loop ran callbacks at least Pegged of the window. "" when
// the signals say nothing: no dispatcher stats and no watchdog miss.
func LoopEvidence(rows []LoopRow, span time.Duration) (text string, pegged bool) {
	if len(rows) == 0 || rows[0].Busy < 0 && !slices.ContainsFunc(rows, func(r LoopRow) bool { return r.Miss > 0 || r.MegaMiss > 0 }) {
		return "", false
	}
	hot := rows[0]
	name := hot.Pod + "/" + WorkerName(hot.Worker)
	var parts []string
	if hot.Busy >= 0 {
		others := make([]float64, 0, len(rows)-1)
		for _, r := range rows[1:] {
			if r.LoopP99 >= 0 {
				others = append(others, r.LoopP99)
			}
		}
		s := fmt.Sprintf("%s's event loop ran callbacks %.0f%% of the window (the sum of listener_manager.%s.dispatcher.loop_duration_us), iterations p99 %.1f ms",
			name, 100*min(1, hot.Busy), WorkerName(hot.Worker), hot.LoopP99)
		if len(others) > 0 {
			sort.Float64s(others)
			s += fmt.Sprintf(" against %.1f ms on the other workers (median of their p99s)", others[len(others)/2])
		}
		s += fmt.Sprintf(", poll delay p99 %.1f ms", hot.PollP99)
		parts = append(parts, s)
		pegged = hot.pegged(span)
	} else {
		parts = append(parts, "dispatcher stats are off (the bootstrap's enable_dispatcher_stats), so the loops' busy time is not known")
	}
	var missed []string
	for _, r := range rows {
		if r.Miss > 0 || r.MegaMiss > 0 {
			missed = append(missed, fmt.Sprintf("%s/%s %.0f miss, %.0f mega miss", r.Pod, WorkerName(r.Worker), r.Miss, r.MegaMiss))
		}
	}
	if len(missed) > 0 {
		parts = append(parts, "watchdog: "+strings.Join(missed, "; ")+" (one callback kept the worker from its loop past the guard dog's miss, mega-miss timeout: 200 ms, 1 s by default)")
	} else {
		parts = append(parts, "no watchdog miss on any worker")
	}
	return strings.Join(parts, "; "), pegged
}
