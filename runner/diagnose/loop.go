package diagnose

import "github.com/igwlab/igwlab/runner/stats"

// loopText is what the workers' own stats say over the window, and the worker they show
// pegged ("" for none).
func loopText(w *Window) (text, pegged string) {
	deltas := make([]stats.Pod, len(w.Pods))
	for i, p := range w.Pods {
		deltas[i] = p.Delta
	}
	// A loop's busy share is its iterations' time over the time its counters cover.
	span := w.Span
	if w.Covered > 0 {
		span = w.Covered
	}
	rows := stats.LoopRows(deltas, span)
	text, hot := stats.LoopEvidence(rows, span)
	if hot {
		pegged = rows[0].Pod + "/" + stats.WorkerName(rows[0].Worker)
		text = "pegged: " + text
	}
	return text, pegged
}
