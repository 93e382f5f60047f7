package diagnose

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// In an ambient mesh the mechanism can sit at three tiers: the ingress gateway's workers, the
// waypoint's workers (an HBONE connection's tunnels all run on the worker it landed on), and
// ztunnel's threads (an HBONE connection's bytes are relayed by one task at a time). Tiers
// reads each, judges the Envoy tiers as diagnose judges a gateway, and names the tier where
// the load concentrates: the one whose hottest worker or thread is busiest, when that is near
// saturation, else the Envoy tier whose spread is furthest beyond chance.

// TierWindow is one Envoy tier's window (the gateway's or the waypoint's pods).
type TierWindow struct {
	Tier   string
	Window *Window
}

// ZtunnelWindow is the node proxies' metrics at the start and the end of a window.
type ZtunnelWindow struct {
	Pre, Post []stats.Ztunnel
	Span      time.Duration
}

// TierReport is one tier's findings.
type TierReport struct {
	Tier string `json:"tier"`
	// Report is an Envoy tier's diagnosis (nil for ztunnel's).
	Report *Report `json:"report,omitempty"`
	// Hottest names the busiest worker or thread and its share of the window (-1: not
	// measured at this tier).
	Hottest     string  `json:"hottest,omitempty"`
	HottestBusy float64 `json:"hottest_busy"`
	// Ztunnel's own numbers: tunnels opened in the window and open at its end, HBONE
	// connections open, threads per ztunnel.
	Tunnels     float64 `json:"tunnels,omitempty"`
	TunnelsOpen float64 `json:"tunnels_open,omitempty"`
	HBONE       float64 `json:"hbone_connections,omitempty"`
	Threads     int     `json:"threads,omitempty"`
}

// Ambient is the tier-by-tier diagnosis.
type Ambient struct {
	Tiers []TierReport `json:"tiers"`
	// Concentrates is the tier the load concentrates at ("" when none does), Why the numbers.
	Concentrates string `json:"concentrates"`
	Why          string `json:"why"`
}

// saturated is the busy share from which a worker or thread is the bottleneck.
const saturated = 0.8

// JudgeTiers judges each tier and names the one that concentrates.
func JudgeTiers(envoy []TierWindow, zt *ZtunnelWindow) *Ambient {
	a := &Ambient{}
	for _, tw := range envoy {
		if tw.Tier == TierWaypoint {
			tw.Window.Tier = TierWaypoint
		}
		r := Judge(tw.Window)
		tr := TierReport{Tier: tw.Tier, Report: r, HottestBusy: -1}
		tr.Hottest, tr.HottestBusy = hottestWorker(tw.Window)
		if tw.Window.SinceStart {
			// Nothing moved in the window: the report reads the counters since the pods
			// started, which say nothing of where today's load sits beside a live tier.
			tr.Hottest, tr.HottestBusy = "idle in the window", 0
		}
		a.Tiers = append(a.Tiers, tr)
	}
	if zt != nil && len(zt.Post) > 0 {
		a.Tiers = append(a.Tiers, ztunnelReport(zt))
	}
	best := -1
	for i, t := range a.Tiers {
		if t.HottestBusy >= saturated && (best < 0 || t.HottestBusy > a.Tiers[best].HottestBusy) {
			best = i
		}
	}
	if best >= 0 {
		t := a.Tiers[best]
		a.Concentrates = t.Tier
		a.Why = fmt.Sprintf("its hottest %s was %.0f%% busy (%s)%s", unitOf(t.Tier), 100*t.HottestBusy, t.Hottest, othersText(a.Tiers, best))
		return a
	}
	// No tier near saturation: the spread furthest beyond chance, if any is.
	for i, t := range a.Tiers {
		if t.Report != nil && (t.Report.Verdict == BeyondChance || t.Report.Verdict == FewConnections) &&
			(best < 0 || t.Report.CVRequests > a.Tiers[best].Report.CVRequests) {
			best = i
		}
	}
	if best < 0 {
		a.Why = "no tier's workers are near saturation and every tier's spread is what chance gives its connections"
		return a
	}
	t := a.Tiers[best]
	a.Concentrates = t.Tier
	a.Why = fmt.Sprintf("%s: CV of requests %.3f over %d connection(s), no worker or thread of any tier %.0f%% busy",
		t.Report.Verdict, t.Report.CVRequests, int(t.Report.Connections), 100*saturated)
	return a
}

// unitOf is what a tier's threads are called.
func unitOf(tier string) string {
	if tier == "ztunnel" {
		return "thread"
	}
	return "worker"
}

// othersText compares the other tiers' hottest shares.
func othersText(ts []TierReport, skip int) string {
	s := ""
	for i, t := range ts {
		if i == skip {
			continue
		}
		if t.HottestBusy < 0 {
			s += fmt.Sprintf("; %s: not measured", t.Tier)
			continue
		}
		s += fmt.Sprintf("; %s's hottest %s %.0f%%", t.Tier, unitOf(t.Tier), 100*t.HottestBusy)
	}
	return s
}

// hottestWorker is a window's busiest worker by the emulator's busy time or Envoy's own loop
// durations (-1 where the pods export neither).
func hottestWorker(w *Window) (string, float64) {
	span := w.Span
	if w.Covered > 0 {
		span = w.Covered
	}
	if span <= 0 {
		return "", -1
	}
	name, best := "", -1.0
	for _, p := range w.Pods {
		for _, id := range slices.Sorted(maps.Keys(p.Delta.WorkerBusyNs)) {
			if s := p.Delta.WorkerBusyNs[id] / float64(span.Nanoseconds()); s > best {
				name, best = fmt.Sprintf("%s/worker_%d", p.Name, id), s
			}
		}
	}
	if best >= 0 {
		return name, best
	}
	deltas := make([]stats.Pod, len(w.Pods))
	for i, p := range w.Pods {
		deltas[i] = p.Delta
	}
	if rows := stats.LoopRows(deltas, span); len(rows) > 0 && rows[0].Busy >= 0 {
		return rows[0].Pod + "/" + stats.WorkerName(rows[0].Worker), rows[0].Busy
	}
	return "", -1
}

// ztunnelReport reads the ztunnels' window.
func ztunnelReport(z *ZtunnelWindow) TierReport {
	t := TierReport{Tier: "ztunnel", HottestBusy: -1}
	before := map[string]stats.Ztunnel{}
	for _, p := range z.Pre {
		before[p.Name] = p
	}
	for _, p := range z.Post {
		b := before[p.Name]
		t.Tunnels += p.Tunnels - b.Tunnels
		t.TunnelsOpen += p.TunnelsOpen
		t.HBONE += p.HBONEActive
		if z.Span <= 0 {
			continue
		}
		for i, s := range p.ThreadBusyS {
			if len(b.ThreadBusyS) == len(p.ThreadBusyS) {
				s -= b.ThreadBusyS[i]
			}
			if share := s / z.Span.Seconds(); share > t.HottestBusy {
				t.HottestBusy, t.Hottest, t.Threads = share, fmt.Sprintf("%s thread %d", p.Name, i), len(p.ThreadBusyS)
			}
		}
	}
	return t
}

// ReadZtunnels samples ztunnels' metrics pages (their :15020/metrics URLs) at the start and
// the end of d.
func ReadZtunnels(ctx context.Context, client *http.Client, urls []string, d time.Duration) (*ZtunnelWindow, error) {
	read := func() ([]stats.Ztunnel, error) {
		var out []stats.Ztunnel
		for _, u := range urls {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return nil, fmt.Errorf("--ztunnel %s: %w", u, err)
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, fmt.Errorf("--ztunnel %s: %w", u, err)
			}
			b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			if err != nil {
				return nil, fmt.Errorf("--ztunnel %s: %w", u, err)
			}
			s, err := stats.ParseSnapshot(u, time.Now(), b)
			if err != nil {
				return nil, fmt.Errorf("--ztunnel %s: %w", u, err)
			}
			name := u
			if pu, err := url.Parse(u); err == nil && pu.Host != "" {
				name = "ztunnel " + pu.Host
			}
			out = append(out, stats.ExtractZtunnel(name, s))
		}
		return out, nil
	}
	start := time.Now()
	pre, err := read()
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	post, err := read()
	if err != nil {
		return nil, err
	}
	return &ZtunnelWindow{Pre: pre, Post: post, Span: time.Since(start)}, nil
}

// WriteTiersText prints the tier-by-tier findings.
func WriteTiersText(w io.Writer, a *Ambient) {
	fmt.Fprintln(w, "tiers (ambient)")
	for _, t := range a.Tiers {
		busy := "hottest not measured"
		if t.HottestBusy >= 0 {
			busy = fmt.Sprintf("hottest %s %.0f%% busy (%s)", unitOf(t.Tier), 100*t.HottestBusy, t.Hottest)
		}
		if t.Report != nil {
			verdict := t.Report.Verdict
			if t.Report.SinceStart {
				verdict += " since the pods started"
			}
			fmt.Fprintf(w, "  %-9s %d pod(s), %d connection(s), %s; %s\n", t.Tier, len(t.Report.Pods), int(t.Report.Connections), verdict, busy)
			continue
		}
		fmt.Fprintf(w, "  %-9s %d tunnel(s) open, %d opened in the window, on %d HBONE connection(s); %s\n", t.Tier, int(t.TunnelsOpen), int(t.Tunnels), int(t.HBONE), busy)
	}
	if a.Concentrates == "" {
		fmt.Fprintf(w, "concentrates at: no tier (%s)\n", a.Why)
		return
	}
	fmt.Fprintf(w, "concentrates at: %s (%s)\n", a.Concentrates, a.Why)
}
