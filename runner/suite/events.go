package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// A scenario's events (stacks.Event) change the pool during its window: the runner puts the
// pool in the state the scenario starts from, fires each event at its time from the window's
// start, and keeps each step the target reports on the window's clock (events.json, the
// evaluation's over-time measures).

// eventsSkip says why the target cannot run the scenario's pool and events, or "".
func (r *run) eventsSkip(sc stacks.Scenario) string {
	if _, ok := r.o.Target.(gateway.Sized); !ok && !sc.Pool.Size().IsZero() {
		return fmt.Sprintf("its gateway pods need %s, and the %s target cannot size its pods per scenario", sc.Pool.Size(), r.info.Name)
	}
	if len(sc.Events) == 0 && sc.Pool.Replicas == 0 {
		return ""
	}
	ev, ok := r.o.Target.(gateway.Evented)
	if !ok {
		return fmt.Sprintf("its pool changes during the window (%s), and the %s target cannot change its pool during a window yet", stacks.EventsText(sc.Events), r.info.Name)
	}
	if need := sc.Slots(ev.Slots()); need > ev.Slots() {
		return fmt.Sprintf("needs %d gateway pod slots (its replicas and the new pods its events start) and this target has %d. Rerun with --pods %d", need, ev.Slots(), need)
	}
	return ""
}

// preparePool puts the pool in the state the scenario starts from: its replicas, or the
// target's own for a scenario that names none (after one that changed the pool).
func (r *run) preparePool(ctx context.Context, sc stacks.Scenario) error {
	if sz, ok := r.o.Target.(gateway.Sized); ok {
		if size := sc.Pool.Size(); !size.IsZero() {
			r.prog.step("pool: %s", size)
		}
		if err := sz.Size(ctx, sc.Pool.Size()); err != nil {
			return fmt.Errorf("sizing the gateway's pods: %w", err)
		}
	}
	ev, ok := r.o.Target.(gateway.Evented)
	if !ok {
		return nil
	}
	if sc.Pool.Replicas > 0 {
		r.prog.step("pool: %d gateway pods", sc.Pool.Replicas)
	}
	if err := ev.SetReplicas(ctx, sc.Pool.Replicas); err != nil {
		return fmt.Errorf("setting the gateway's replicas: %w", err)
	}
	return nil
}

// fireEvents fires the scenario's events at their times from start, each in turn, and
// returns a wait for the last to have started. An event that fails becomes a warning.
func (r *run) fireEvents(ctx context.Context, sc stacks.Scenario, start time.Time) func() {
	ev, ok := r.o.Target.(gateway.Evented)
	if !ok || len(sc.Events) == 0 {
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, e := range sc.Events {
			if err := sleep(ctx, time.Until(start.Add(e.At.D()))); err != nil {
				return
			}
			r.event(ctx, ev, e, sc.Pool)
		}
	}()
	return wg.Wait
}

// marks are the steps of the scenario's events since the scenario began, on the window's
// clock, written to events.json.
func (r *run) marks(since, start time.Time, dir string, ew *measure.Errs) []analysis.Mark {
	ev, ok := r.o.Target.(gateway.Evented)
	if !ok {
		return nil
	}
	var out []analysis.Mark
	for _, d := range ev.Timeline(since) {
		out = append(out, analysis.Mark{At: d.Time.Sub(start).Round(time.Millisecond), Kind: d.Kind, Pod: d.Pod, Detail: d.Detail})
	}
	if len(out) > 0 {
		ew.Add(measure.WriteJSON(filepath.Join(dir, "events.json"), out))
	}
	return out
}

// eventSampleEvery is the sampling interval of a window with events: fine enough to see a
// reconnect burst and a pod turning ready.
const eventSampleEvery = 250 * time.Millisecond

// seenPods extends the window's pods with those that appeared in it; a new pod's counters
// before the window were zero (it did not exist), so its "before" is an empty snapshot.
func seenPods(gw []gateway.Pod, smp *measure.Sampler, pre []stats.Snapshot, preRaw [][]byte) ([]gateway.Pod, []stats.Snapshot, [][]byte) {
	had := map[string]bool{}
	for _, p := range gw {
		had[p.Name] = true
	}
	for _, p := range smp.Seen() {
		if !had[p.Name] {
			gw = append(gw, p)
			pre = append(pre, stats.Snapshot{Pod: p.Name})
			preRaw = append(preRaw, nil)
		}
	}
	return gw, pre, preRaw
}

// lastForGone replaces the after-window read of a pod that is gone (scaled in, replaced by a
// rollout) with its last read in the window, as Prometheus keeps a deleted pod's last
// samples; only a pod never read at all stays an error.
// It returns the errors left and the pods still there to read the rest from.
func lastForGone(gw []gateway.Pod, smp *measure.Sampler, post []stats.Snapshot, postRaw [][]byte, errs []error) ([]error, []gateway.Pod) {
	var out []error
	var there []gateway.Pod
	for i, err := range errs {
		if err == nil {
			there = append(there, gw[i])
			continue
		}
		if snap, raw, ok := smp.Last(gw[i].Name); ok {
			post[i], postRaw[i] = snap, raw
			continue
		}
		out = append(out, err)
	}
	return out, there
}

// rotates says whether a knob drains connections on a schedule: count or duration rotation.
func rotates(k stacks.Knobs) bool {
	for _, v := range k.Effective() {
		if strings.HasSuffix(v.Path, ".max_requests_per_connection") || strings.HasSuffix(v.Path, ".max_connection_duration") {
			if v.Value != "" && v.Value != "unlimited" && v.Value != "0" && v.Value != "0s" {
				return true
			}
		}
	}
	return false
}

// timelineFile keeps what the over-time measures read (the window's samples, the events'
// steps, the pods it began with), so that a re-analysis computes them as the run did.
const timelineFile = "timeline.json"

type overTimeInput struct {
	Step    time.Duration     `json:"step"`
	Samples []analysis.Sample `json:"samples"`
	Marks   []analysis.Mark   `json:"marks,omitempty"`
	Initial []string          `json:"initial"`
	HPA     analysis.HPA      `json:"hpa"`
	Rotates bool              `json:"rotates,omitempty"`
}

func overTimeOf(in *analysis.Input) overTimeInput {
	return overTimeInput{Step: in.Step, Samples: in.Timeline, Marks: in.Marks, Initial: in.Initial, HPA: in.HPA, Rotates: in.Rotates}
}

// readOverTime fills the over-time inputs from a scenario folder; a folder written before
// they were kept has none, and its result has no over-time measures.
func readOverTime(sdir string, in *analysis.Input) error {
	b, err := os.ReadFile(filepath.Join(sdir, timelineFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var o overTimeInput
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("%s/%s: %w", sdir, timelineFile, err)
	}
	in.Step, in.Timeline, in.Marks, in.Initial, in.HPA, in.Rotates = o.Step, o.Samples, o.Marks, o.Initial, o.HPA, o.Rotates
	return nil
}
