package diagnose

import (
	"fmt"
	"math"
	"time"
)

// YoungPod is a pod that started long after the oldest (a scale-out, a rollout, a restart)
// and holds far less than its share of the open connections: the Service places only new
// connections, so the long-lived ones opened before it stay where they are.
type YoungPod struct {
	Name    string  `json:"name"`
	UptimeS float64 `json:"uptime_s"`
	// ActiveShare is its share of the open connections; Fair is 1/pods.
	ActiveShare float64 `json:"active_share"`
	Fair        float64 `json:"fair_share"`
	// Opened is what it was placed in the window, Expected what an even placement of the
	// pool's connections opened while it was up would have given it.
	Opened   float64 `json:"opened"`
	Expected float64 `json:"expected_opened"`
	Text     string  `json:"text"`
}

// youngPods names the pods under half the oldest pod's age (server.uptime) that hold under
// half their share of the open connections, when enough are open to tell (two per pod).
func youngPods(w *Window, r *Report) []YoungPod {
	n := len(r.Pods)
	oldest := 0.0
	for _, p := range w.Pods {
		oldest = math.Max(oldest, p.Post.Uptime)
	}
	if oldest <= 0 || n < 2 || r.ConnectionsActive < float64(2*n) {
		return nil
	}
	span := w.Span.Seconds()
	var out []YoungPod
	for i, p := range w.Pods {
		up := p.Post.Uptime
		if up <= 0 || up >= oldest/2 {
			continue
		}
		row := r.Pods[i]
		y := YoungPod{Name: p.Name, UptimeS: up, ActiveShare: row.Active / r.ConnectionsActive, Fair: 1 / float64(n), Opened: row.Opened}
		if y.ActiveShare >= y.Fair/2 {
			continue
		}
		// The connections opened while it was up, pool-wide, spread evenly over the pods.
		alive := 1.0
		if span > 0 && up < span {
			alive = up / span
		}
		y.Expected = r.ConnectionsOpened * alive / float64(n)
		lever := "rotation moves them: max_requests_per_connection (or max_connection_duration) drains the old connections and their clients redial across every pod"
		if r.Rotation.MaxRequestsReached+r.Rotation.MaxDurationReached > 0 {
			lever = "rotation is on but slow for these connections: a lower max_requests_per_connection moves them sooner (igwlab sweep over 15-scale-out-rotation picks a value)"
		}
		placed := "new connections do reach it"
		if y.Expected >= 5 && y.Opened < y.Expected/3 {
			placed = "it is also placed far fewer new connections than an even placement gives: check that it is in the Service's endpoints"
		}
		y.Text = fmt.Sprintf("%s, up %s (the oldest %s), holds %.0f%% of the open connections against %.0f%% for an even spread; it was placed %.0f connections in the window against %.1f expected, so %s; the %d connections older than the window stay on the pods that were there; %s",
			p.Name, dur(up), dur(oldest), 100*y.ActiveShare, 100*y.Fair, y.Opened, y.Expected, placed, int(r.OlderThanWindow), lever)
		out = append(out, y)
	}
	return out
}

func dur(s float64) string { return (time.Duration(s) * time.Second).String() }
