package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// scenario runs one scenario and writes its folder. It never returns nil: a scenario that
// cannot run is reported as skipped or failed, and the suite goes on.
func (r *run) scenario(ctx context.Context, lab *stacks.Scenario, dir string) *analysis.Result {
	sc, deps := r.o.Target.Resolve(lab)
	if r.o.Duration > 0 {
		sc.Load.Duration = stacks.Duration(r.o.Duration)
	}
	res := &analysis.Result{Name: sc.Name, Title: sc.Title, Hypothesis: sc.Hypothesis, Client: sc.Client.Kind,
		Knobs: sc.Knobs.Effective()}
	_, workers := PoolSize(r.info, sc)
	if need := sc.Requires.MinConcurrency; need > workers {
		res.Status = analysis.StatusSkipped
		res.Reason = fmt.Sprintf("needs concurrency >= %d (Envoy workers per pod) and this target has %d; with one worker there is nothing to balance inside a pod. Rerun with --concurrency %d", need, workers, need)
		return res
	}
	if why := r.eventsSkip(sc); why != "" {
		res.Status, res.Reason = analysis.StatusSkipped, why
		return res
	}
	var ew measure.Errs
	why := "" // the scenario's reason for its own departures; the target's carry theirs
	if len(deps) > 0 {
		why = strings.TrimSpace(lab.Local.Why)
	}
	deps = append(deps, r.info.Departures...)
	ew.Add(writeScenarioFile(filepath.Join(dir, "scenario.yaml"), lab, sc, deps, why, r.info, r.o.EnvoyFilters))
	started := r.now()
	out, err := r.measure(ctx, sc, deps, dir, &ew)
	if err != nil {
		res.Status, res.Reason = analysis.StatusFailed, err.Error()
		if ctx.Err() != nil {
			res.Status, res.Reason = analysis.StatusInterrupted, "stopped by the user before the window ended; partial data is in this folder"
			var up *gateway.InterruptedUpError
			if errors.As(err, &up) {
				res.Reason = "stopped by the user while its knobs were being applied: " + up.State
			}
		}
		r.disruptions(res, started, dir, &ew)
		res.Warnings = append(res.Warnings, r.takeWarnings()...)
		ew.Add(measure.WriteJSON(filepath.Join(dir, "result.json"), res))
		return res
	}
	a := analysis.Analyze(*out)
	if err := ew.Err(); err != nil {
		a.Faults = append(a.Faults, err.Error())
	}
	r.disruptions(a, started, dir, &ew)
	a.Warnings = append(a.Warnings, r.takeWarnings()...)
	measure.WriteScenarioResults(dir, a, out, &ew)
	return a
}

// disruptions marks a scenario disturbed when the target saw a pod killed or restarted or a
// worker stuck while it ran, and keeps what happened and when in its results.
func (r *run) disruptions(res *analysis.Result, since time.Time, dir string, ew *measure.Errs) {
	measure.RecordDisruptions(r.o.Target, since, res, dir, ew)
}

// measure does the scenario's steps and returns the analysis input.
func (r *run) measure(ctx context.Context, sc stacks.Scenario, deps []stacks.Departure, dir string, ew *measure.Errs) (*analysis.Input, error) {
	t := r.o.Target
	begun := r.now()
	if err := r.preparePool(ctx, sc); err != nil {
		return nil, err
	}
	// An east-west scenario measures the waypoint's pods where an ingress one measures the
	// gateway's: the tier the scenario's knobs are on and its client's connections reach.
	tier := gateway.Gateway
	if sc.EastWest != nil {
		tier = gateway.Waypoint
	}
	gw, err := t.Pods(ctx, tier)
	if err != nil {
		return nil, err
	}
	var wp, zt []gateway.Pod
	if sc.EastWest != nil {
		if zt, err = t.Pods(ctx, gateway.Ztunnel); err != nil {
			return nil, err
		}
	}
	if sc.Waypoint {
		if wp, err = t.Pods(ctx, gateway.Waypoint); err != nil {
			return nil, err
		}
		if zt, err = t.Pods(ctx, gateway.Ztunnel); err != nil {
			return nil, err
		}
	}
	r.prog.step("applying %s", sc.Knobs.Short())
	// The settle time runs from the change, alongside the wait for the replaced listeners to
	// drain: it is time for the pool to quiet down, not an extra pause after it has.
	settled := r.now().Add(sc.Load.Settle.D())
	if err := t.Apply(ctx, sc); err != nil {
		return nil, fmt.Errorf("applying knobs: %w", err)
	}
	prefix := r.names.HCMPrefix
	if sc.EastWest != nil {
		prefix = ""
		if snaps, _, errs := r.adm().Scrape(ctx, gw); errors.Join(errs...) == nil {
			prefix = waypointNames(snaps).HCMPrefix
		}
	}
	if err := waitInEffect(ctx, t, gw, tier, sc.Knobs, prefix, r.o.ApplyTimeout); err != nil {
		return nil, err
	}
	r.prog.step("settling %s", sc.Load.Settle)
	if err := r.wait(ctx, settled.Sub(r.now())); err != nil {
		return nil, err
	}
	spec, err := r.loadSpec(sc)
	if err != nil {
		return nil, err
	}
	if w := sc.Load.Warmup.D(); w > 0 {
		r.prog.step("warm-up %s", sc.Load.Warmup)
		warm := spec
		warm.Duration = w
		if _, err := r.runLoad(ctx, warm, dir, nil); err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	pre, preRaw, names, err := r.quiet(ctx, gw, sc.EastWest != nil)
	if err != nil {
		return nil, err
	}
	wpPre, wpPreRaw, _ := r.adm().Scrape(ctx, wp)
	ztPre, ztPreRaw, _ := r.adm().Scrape(ctx, zt)
	kl, _ := t.Pods(ctx, gateway.Kubelet)
	klPre, klPreRaw, _ := r.adm().ScrapePath(ctx, kl, gateway.KubeletCAdvisor)
	smp := measure.NewSampler(t, gw, names, pre)
	podNames := make([]string, len(gw))
	for i, p := range gw {
		podNames[i] = p.Name
	}
	smp.OnSample = func(l measure.Live) { r.prog.sample(l, podNames) }
	every := sampleEvery(sc.Load.Duration.D())
	if len(sc.Events) > 0 {
		smp.Relist = true
	}
	switch {
	case sc.Load.SampleEvery > 0:
		every = sc.Load.SampleEvery.D()
	case len(sc.Events) > 0:
		every = min(every, eventSampleEvery)
	}
	start, window, result, loadErr := r.window(ctx, sc, spec, smp, every, dir)
	initial := podNames
	if smp.Relist {
		gw, pre, preRaw = seenPods(gw, smp, pre, preRaw)
	}
	post, postRaw, postErrs := r.adm().Scrape(context.WithoutCancel(ctx), gw)
	there := gw
	if smp.Relist {
		postErrs, there = lastForGone(gw, smp, post, postRaw, postErrs)
	}
	wpPost, wpPostRaw, _ := r.adm().Scrape(context.WithoutCancel(ctx), wp)
	ztPost, ztPostRaw, _ := r.adm().Scrape(context.WithoutCancel(ctx), zt)
	klPost, klPostRaw, _ := r.adm().ScrapePath(context.WithoutCancel(ctx), kl, gateway.KubeletCAdvisor)
	if n, err := stats.Discover(append(pre, post...), "httpbin"); err == nil {
		names.Cluster = n.Cluster
	}

	for i, p := range gw {
		// Empty for a pod that did not exist before the window: its counters were zero.
		ew.Add(measure.WriteFile(filepath.Join(dir, "stats_pre", p.Name+".prom"), preRaw[i]))
		ew.Add(measure.WriteFile(filepath.Join(dir, "stats_post", p.Name+".prom"), postRaw[i]))
	}
	for i, p := range wp {
		ew.Add(measure.WriteFile(filepath.Join(dir, "waypoint_stats", "pre", p.Name+".prom"), wpPreRaw[i]))
		ew.Add(measure.WriteFile(filepath.Join(dir, "waypoint_stats", "post", p.Name+".prom"), wpPostRaw[i]))
	}
	for i, p := range zt {
		ew.Add(measure.WriteFile(filepath.Join(dir, "ztunnel_stats", "pre", p.Name+".prom"), ztPreRaw[i]))
		ew.Add(measure.WriteFile(filepath.Join(dir, "ztunnel_stats", "post", p.Name+".prom"), ztPostRaw[i]))
	}
	for i, p := range kl {
		ew.Add(measure.WriteFile(filepath.Join(dir, kubeletDir, "pre", p.Name+".prom"), klPreRaw[i]))
		ew.Add(measure.WriteFile(filepath.Join(dir, kubeletDir, "post", p.Name+".prom"), klPostRaw[i]))
	}
	r.dumps(context.WithoutCancel(ctx), there, dir, ew)
	ew.Add(measure.WriteFile(filepath.Join(dir, "timeseries.csv"), smp.CSV()))
	if result != nil {
		ew.Add(measure.WriteJSON(filepath.Join(dir, result.Client+".json"), result.Native))
		ew.Add(measure.WriteFile(filepath.Join(dir, result.Client+".txt"), []byte(result.Text)))
		ew.Add(measure.WriteJSON(filepath.Join(dir, "client_result.json"), result))
	}
	if loadErr != nil {
		return nil, fmt.Errorf("load client %s: %w", sc.Client.Kind, loadErr)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := errors.Join(postErrs...); err != nil {
		return nil, fmt.Errorf("reading stats after the load: %w", err)
	}
	in := &analysis.Input{Scenario: analysis.ScenarioOf(sc), Departures: deps, Client: clientInput(result), Window: window, Peaks: smp.Peaks,
		ClosedDuringLoad: smp.ClosedDuringLoad(), ClientRTT: time.Duration(r.info.ClientRTTMs * float64(time.Millisecond)),
		Timeline: smp.Timeline(), Step: every, Marks: r.marks(begun, start, dir, ew), Initial: initial,
		HPA: analysis.HPA{Target: analysis.DefaultHPA.Target, Sync: sc.Pool.WithDefaults().HPASync.D()}, Rotates: rotates(sc.Knobs)}
	ew.Add(measure.WriteJSON(filepath.Join(dir, timelineFile), overTimeOf(in)))
	for i := range gw {
		in.Pre = append(in.Pre, stats.Extract(pre[i], names))
		in.Post = append(in.Post, stats.Extract(post[i], names))
	}
	in.CPUPre, in.CPUPost = containerCPU(klPre), containerCPU(klPost)
	if sc.EastWest != nil {
		in.Tier = gateway.Waypoint
		if sc.EastWest.Via == stacks.ViaZtunnel {
			in.Tier = gateway.Ztunnel // the waypoint's pods stand idle: ztunnel carries it all
		}
		for i, p := range zt {
			in.ZtunnelPre = append(in.ZtunnelPre, stats.ExtractZtunnel(p.Name, ztPre[i]))
			in.ZtunnelPost = append(in.ZtunnelPost, stats.ExtractZtunnel(p.Name, ztPost[i]))
		}
	}
	if len(wp) > 0 {
		wn := waypointNames(append(wpPre, wpPost...))
		for i := range wp {
			in.WaypointPre = append(in.WaypointPre, stats.Extract(wpPre[i], wn))
			in.WaypointPost = append(in.WaypointPost, stats.Extract(wpPost[i], wn))
		}
	}
	return in, nil
}

// quiet reads the gateway pods' stats just before the window, once no connection is open on
// the gateway's listener: every connection of the window is then the client's own. A warm-up
// client closes its connections as it ends; if some stay open (another client, a connection
// being torn down) after quietWait, the window starts anyway and a warning says how many.
func (r *run) quiet(ctx context.Context, gw []gateway.Pod, waypoints bool) ([]stats.Snapshot, [][]byte, stats.Names, error) {
	deadline := r.now().Add(quietWait)
	tier := "gateway"
	if waypoints {
		tier = "waypoint"
	}
	for {
		pre, preRaw, preErrs := r.adm().Scrape(ctx, gw)
		if err := errors.Join(preErrs...); err != nil {
			return nil, nil, stats.Names{}, fmt.Errorf("reading stats before the load: %w", err)
		}
		if names, err := stats.Discover(pre, "httpbin"); err == nil && r.names.HCMPrefix == "" && !waypoints {
			r.names = names
			r.sum.Names = names
		}
		names := r.names
		if waypoints {
			names = waypointNames(pre)
		}
		open := 0.0
		for _, s := range pre {
			open += stats.Extract(s, names).CxActive
		}
		if open == 0 || r.now().After(deadline) || ctx.Err() != nil {
			if open > 0 {
				r.warn(fmt.Sprintf("%d connection(s) were still open on the %s when the window began (opened before it: they count in downstream_cx_active, not in the window's connections)", int(open), tier))
			}
			return pre, preRaw, names, nil
		}
		if err := r.wait(ctx, 100*time.Millisecond); err != nil {
			return nil, nil, stats.Names{}, err
		}
	}
}

// sampleEvery is how often the window is sampled: once a second, or eight times in a window
// shorter than eight seconds, so that even a short one has rows (and a count of the
// connections that closed while it ran).
func sampleEvery(window time.Duration) time.Duration {
	return max(100*time.Millisecond, min(time.Second, window/8))
}

// kubeletDir holds the kubelets' cAdvisor pages before and after the window.
const kubeletDir = "kubelet_stats"

// containerCPU is every gateway pod's proxy container from the kubelets' pages.
func containerCPU(pages []stats.Snapshot) map[string]stats.CPU {
	out := map[string]stats.CPU{}
	for _, p := range pages {
		for pod, c := range stats.ContainerCPU(p) {
			out[pod] = c
		}
	}
	return out
}

// quietWait bounds the wait for the gateway to hold no connection before a window.
const quietWait = 3 * time.Second

// waypointNames finds the waypoint's HCM prefix: its listener names are not the gateway's, so
// take whichever HCM serving requests carried the most connections (ties by name). Not the
// admin's, nor connect_terminate, the HCM Istio gives the waypoint's HBONE listener
// (listener_waypoint.go): its streams are tunnels, the requests are served inside them.
func waypointNames(snaps []stats.Snapshot) stats.Names {
	best, bestV := "", -1.0
	for _, s := range snaps {
		for k, v := range s.LabelValues("envoy_http_downstream_cx_http2_total", "http_conn_manager_prefix") {
			if k == "admin" || k == "prometheus_stats" || k == "connect_terminate" {
				continue
			}
			if v > bestV || (v == bestV && k < best) {
				best, bestV = k, v
			}
		}
	}
	listener := best
	if i := strings.Index(best, "0.0.0.0_"); i >= 0 {
		listener = best[i:]
	}
	return stats.Names{HCMPrefix: best, Listener: listener}
}

func (r *run) dumps(ctx context.Context, pods []gateway.Pod, dir string, ew *measure.Errs) {
	for _, p := range pods {
		for _, d := range []struct{ path, file string }{
			{"/stats", filepath.Join("stats_post", p.Name+".txt")},
			{"/listeners?format=json", filepath.Join("listeners", p.Name+".json")},
			{"/clusters", filepath.Join("clusters", p.Name+".txt")},
			{"/config_dump", filepath.Join("config_dump", p.Name+".json")},
		} {
			b, err := r.adm().Read(ctx, p, d.path)
			if err != nil {
				ew.Add(err)
				continue
			}
			ew.Add(measure.WriteFile(filepath.Join(dir, d.file), b))
		}
	}
}

// writeScenarioFile writes scenario.yaml: the scenario as it ran, and where (and why) that
// departs from the lab's values.
func writeScenarioFile(path string, lab *stacks.Scenario, run stacks.Scenario, deps []stacks.Departure, why string, info gateway.Info, efs []*envoyfilter.Imported) error {
	doc := map[string]any{
		"name": run.Name, "title": run.Title, "teaches": run.Teaches, "watch": run.Watch,
		"target": info.Name, "file": lab.File, "client": run.Client, "load": run.Load,
		"knobs_in_force": run.Knobs.Effective(), "filters": run.Filters, "waypoint": run.Waypoint,
	}
	if run.EastWest != nil {
		doc["east_west"] = run.EastWest
	}
	if why != "" {
		doc["local_departures_why"] = why
	}
	if info.EnvoyDefaults != "" {
		doc["envoy_defaults"] = info.EnvoyDefaults
	}
	if len(deps) > 0 {
		doc["local_departures"] = deps
	}
	if len(efs) > 0 {
		// The user's EnvoyFilters: the knobs each set (in force above), and what was not applied.
		doc["envoyfilters"] = efs
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	return measure.WriteFile(path, b)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// PoolSize is the pods and workers per pod a scenario's window starts with on a target: the
// scenario's pool where it sets one (a production-size pool), else the target's.
func PoolSize(info gateway.Info, sc stacks.Scenario) (pods, workers int) {
	pods, workers = info.Pods, info.Concurrency
	if sc.Pool.Replicas > 0 {
		pods = sc.Pool.Replicas
	}
	if sc.Pool.Concurrency > 0 {
		workers = sc.Pool.Concurrency
	}
	return pods, workers
}
