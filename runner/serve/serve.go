// Package serve keeps the local gateway pool up for a client of the user's own, shows live
// per-pod numbers, and on Ctrl-C reports the distribution the client produced and classifies
// how it behaved at the gateway's limits: whether it dials or queues at a stream cap, and
// whether it reconnects after a GOAWAY.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/runner/suite"
	"github.com/igwlab/igwlab/stacks"
)

// Options configure igwlab serve.
type Options struct {
	Local    *local.Local
	Scenario *stacks.Scenario // nil: Envoy's defaults
	OutDir   string
	Out      io.Writer // URLs and the final report
	Live     io.Writer // the live table; nil for none
	Events   io.Writer // a line for each pod disruption (an OOM kill, a restart) as it happens; nil for none
	LiveTTY  bool      // redraw the live table in place
	Interval time.Duration
}

// Run keeps the local pool up with a scenario's knobs until ctx ends, showing live per-pod
// numbers, then reports the distribution the user's client produced and how it behaved.
func Run(ctx context.Context, o Options) (*suite.Summary, error) {
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	t := o.Local
	sc := stacks.Scenario{Name: "serve", Title: "your client against the local pool"}
	if o.Scenario != nil {
		sc, _ = t.Resolve(o.Scenario)
		sc.Title = "your client, " + o.Scenario.Name + "'s knobs"
	}
	if err := t.Apply(ctx, sc); err != nil {
		return nil, err
	}
	info, _ := t.Info(ctx)
	pods, _ := t.Pods(ctx, gateway.Gateway)
	vip := "http://" + t.Pool.VIP()
	if t.Pool.Config().TLS {
		vip = "https://" + t.Pool.VIP()
		fmt.Fprintf(o.Out, "gateway VIP (h2 over TLS, self-signed certificate: use -k / --insecure): %s\n", vip)
	} else {
		fmt.Fprintf(o.Out, "gateway VIP (h2c, prior knowledge): %s\n", vip)
	}
	fmt.Fprintf(o.Out, "knobs: %s\n", sc.Knobs.Short())
	for _, p := range pods {
		fmt.Fprintf(o.Out, "  pod %s admin %s/stats/prometheus\n", p.Name, p.Admin)
	}
	writeAmbient(ctx, o.Out, t, sc)
	if k, err := t.Pods(ctx, gateway.Kubelet); err == nil && len(k) > 0 {
		fmt.Fprintf(o.Out, "  node %s kubelet %s%s (the pods' CPU and CFS throttling, as cAdvisor names them)\n", k[0].Name, k[0].Admin, gateway.KubeletCAdvisor)
	}
	if sc.Filters.JWT != nil {
		tok, _ := t.Token(sc.Filters.JWT.Issuer)
		fmt.Fprintf(o.Out, "JWT for the filter (issuer %s): %s\n", sc.Filters.JWT.Issuer, tok)
	}
	// The counters' baseline is read before the line that says Ctrl-C may end the run: a Ctrl-C
	// right after that line stopped serve mid-read, and it ended with an error and no results.
	pre, _, preErrs := measure.Scrape(ctx, t, pods)
	if err := errors.Join(preErrs...); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "try:  h2load -c 4 -m 100 -D 20 %s/get\n      curl --http2-prior-knowledge %s/get\n", vip, vip)
	fmt.Fprintln(o.Out, "press Ctrl-C to stop and see what your client did")

	names, _ := stats.Discover(pre, "httpbin")
	t.Pool.ResetObservation()
	start := time.Now()
	smp := measure.NewSampler(t, pods, names, pre)
	if o.Live != nil {
		smp.OnSample = func(l measure.Live) { writeLive(o.Live, o.LiveTTY, pods, l, t.Pool.Observe()) }
	}
	if o.Events != nil {
		prefix := ""
		if o.LiveTTY && o.Live == o.Events {
			prefix = "\r\033[K" // over the live line, which the next sample draws again
		}
		stop := watchDisruptions(ctx, t, start, o.Events, prefix)
		defer stop()
	}
	smp.Run(ctx, o.Interval) // until Ctrl-C
	window := time.Since(start)
	if o.Live != nil && o.LiveTTY {
		fmt.Fprintln(o.Live)
	}

	bg := context.WithoutCancel(ctx)
	post, _, postErrs := measure.Scrape(bg, t, pods)
	if err := errors.Join(postErrs...); err != nil {
		return nil, err
	}
	if n, err := stats.Discover(append(pre, post...), "httpbin"); err == nil {
		names = n
	}
	in := analysis.Input{Scenario: analysis.ScenarioOf(sc), Departures: info.Departures, Window: window, Peaks: smp.Peaks,
		ClosedDuringLoad: smp.ClosedDuringLoad()}
	for i := range pods {
		in.Pre = append(in.Pre, stats.Extract(pre[i], names))
		in.Post = append(in.Post, stats.Extract(post[i], names))
	}
	res := analysis.Analyze(in)
	obs := t.Pool.Observe()
	verdicts := Classify(obs, sc.Knobs, res.RefusedStreams, res.ProtocolErrors)
	dir := filepath.Join(o.OutDir, time.Now().UTC().Format("20060102T150405Z")+"-serve")
	var ew measure.Errs
	// An OOM kill (or any other disruption) of a pod while the client ran: what, when, why.
	disrupted := measure.RecordDisruptions(t, start, res, filepath.Join(dir, "serve"), &ew)
	measure.WriteScenarioResults(filepath.Join(dir, "serve"), res, &in, &ew)
	ew.Add(measure.WriteFile(filepath.Join(dir, "serve", "timeseries.csv"), smp.CSV()))
	sum := &suite.Summary{Target: info.Name, Pods: info.Pods, Concurrency: info.Concurrency, Repeat: 1,
		Started: start.UTC(), Finished: time.Now().UTC(), Complete: true, Info: info, Names: names,
		Order: []string{"serve"}, Scenarios: map[string]*analysis.Result{"serve": res},
		Hypotheses: map[string]analysis.Verdict{}, Dir: dir}
	for _, v := range verdicts {
		sum.Hypotheses[v.ID] = v
	}
	ew.Add(measure.WriteJSON(filepath.Join(dir, "serve", "client_behaviour.json"), obs))
	ew.Add(measure.WriteJSON(filepath.Join(dir, "summary.json"), sum))
	writeServeReport(o.Out, res, obs, verdicts, disrupted, dir)
	return sum, ew.Err()
}

// Classify says how an uninstrumented client behaved at the gateway's limits. refused and
// protocolErrors are Envoy's own counts (http2.stream_refused_errors: streams over a cap the
// client had not acknowledged yet; downstream_cx_protocol_error: connections killed, among
// other reasons, for a stream over a cap the client had acknowledged).
func Classify(o emulator.Observation, k stacks.Knobs, refused, protocolErrors float64) []analysis.Verdict {
	limit := "2147483647 (Envoy default)"
	if v, ok := stacks.Registry[0].Get(&k); ok {
		limit = v
	}
	var out []analysis.Verdict
	cap := analysis.Verdict{ID: "stream-cap", Title: "at max_concurrent_streams " + limit}
	switch {
	case o.Opened == 0:
		cap.Verdict, cap.Detail = analysis.Inconclusive, "no connection was opened"
	case o.CapHits == 0:
		cap.Verdict = "NEVER AT CAP"
		cap.Detail = fmt.Sprintf("the most streams on one connection were %d: the cap never bound, so this run cannot tell whether the client dials or queues", o.PeakStreams)
	case o.OpenedWhileAtCap > 0:
		cap.Verdict = "DIALS"
		cap.Detail = fmt.Sprintf("opened %d connection(s) while another sat at the cap: it dials new connections at the stream cap, so a lower max_concurrent_streams spreads it", o.OpenedWhileAtCap)
	default:
		cap.Verdict = "QUEUES"
		cap.Detail = fmt.Sprintf("reached the cap %d time(s) and never opened a connection meanwhile: it queues on its connections, so max_concurrent_streams will not spread it; use max_requests_per_connection", o.CapHits)
	}
	if refused > 0 {
		cap.Detail += fmt.Sprintf("; %d stream(s) refused over the cap before the client acknowledged it (http2.stream_refused_errors)", int(refused))
	}
	if protocolErrors > 0 {
		cap.Detail += fmt.Sprintf("; %d connection(s) closed on a protocol error (downstream_cx_protocol_error), as a stream over an acknowledged cap is", int(protocolErrors))
	}
	out = append(out, cap)
	ga := analysis.Verdict{ID: "goaway", Title: "after a GOAWAY"}
	switch {
	case o.Drains == 0:
		ga.Verdict, ga.Detail = "NO GOAWAY", "the gateway sent no GOAWAY (set max_requests_per_connection or max_connection_duration to see it)"
	case o.OpenedAfterDrain > 0:
		ga.Verdict = "RECONNECTS"
		ga.Detail = fmt.Sprintf("%d drain(s), %d connection(s) opened after the first: it reconnects on GOAWAY, so count or time rotation re-places it", o.Drains, o.OpenedAfterDrain)
	default:
		ga.Verdict = "DID NOT RECONNECT"
		ga.Detail = fmt.Sprintf("%d drain(s) and no new connection afterwards", o.Drains)
	}
	return append(out, ga)
}

func writeLive(w io.Writer, tty bool, pods []gateway.Pod, l measure.Live, o emulator.Observation) {
	parts := make([]string, 0, len(pods))
	for i, p := range pods {
		parts = append(parts, fmt.Sprintf("p%d=%d", i, int(l.Connections[p.Name])))
	}
	line := fmt.Sprintf("%5.0fs  active conns %s  CV %.2f  %6.0f rps  opened %d  GOAWAY %d  refused %d  protocol errors %d",
		l.Elapsed.Seconds(), strings.Join(parts, " "), l.CV, l.RPS, o.Opened, o.Drains, int(l.Refused), int(l.ProtocolErrors))
	if tty {
		fmt.Fprintf(w, "\r\033[K%s", line)
		return
	}
	fmt.Fprintln(w, line)
}

func writeServeReport(w io.Writer, r *analysis.Result, o emulator.Observation, vs []analysis.Verdict, ds []gateway.Disruption, dir string) {
	fmt.Fprintf(w, "\nwhat your client did over %.0fs:\n", r.WindowS)
	names := slices.Sorted(maps.Keys(r.Connections))
	for _, n := range names {
		fmt.Fprintf(w, "  %-40s %4d connections  %8d requests\n", n, int(r.Connections[n]), int(r.RequestsPerPod[n]))
	}
	fmt.Fprintf(w, "connections %d, CV across pods %.3f", int(r.ConnectionsTotal), r.CV)
	if r.Chance != nil {
		fmt.Fprintf(w, " (%s; chance band for k=%d is [%.3f, %.3f])", r.ChanceVerdict, r.Chance.K, r.Chance.Lo, r.Chance.Hi)
	}
	fmt.Fprintf(w, "\nrequests CV %.3f; hottest worker %.0f%% busy; GOAWAY drains %d; refused streams %d; protocol errors %d; peak streams on one connection %d\n",
		r.CVRequests, 100*r.BusyMax, o.Drains, int(r.RefusedStreams), int(r.ProtocolErrors), o.PeakStreams)
	for _, v := range vs {
		fmt.Fprintf(w, "%-10s %-18s %s\n", v.ID, v.Verdict, v.Detail)
	}
	for _, d := range ds {
		fmt.Fprintf(w, "%-10s %-18s %s %s: %s\n", "pod", strings.ToUpper(d.Kind), d.Time.UTC().Format("15:04:05.000"), d.Pod, d.Detail)
	}
	fmt.Fprintf(w, "results: %s\n", dir)
}

// watchDisruptions writes each disruption of the pool as it happens (checked every 100 ms), so
// that a pod OOM-killed under a hostile client is seen at once, not only in the final report.
func watchDisruptions(ctx context.Context, t gateway.Disrupted, since time.Time, w io.Writer, prefix string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			ds := t.Disruptions(since)
			for _, d := range ds[min(seen, len(ds)):] {
				fmt.Fprintf(w, "%sigwlab serve: %s (%.1f s): %s %s: %s\n", prefix, d.Time.UTC().Format("15:04:05.000"),
					d.Time.Sub(since).Seconds(), d.Pod, d.Kind, d.Detail)
			}
			seen = max(seen, len(ds))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
