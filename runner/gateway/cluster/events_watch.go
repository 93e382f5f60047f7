package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/kube"
)

// startWatch starts listing the gateway pods, once per window with events: a pod there at
// the first list is the pool the window began with; each later change is a step.
func (ev *poolEvents) startWatch(c *Cluster) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.watch != nil {
		return
	}
	ctx, cancel := context.WithCancel(ev.bg)
	ev.watch, ev.watched = cancel, make(chan struct{})
	first := true
	go func() {
		defer close(ev.watched)
		for {
			if pods, err := c.listGateway(ctx); err == nil {
				ev.observe(pods, first)
				first = false
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(PodPoll):
			}
		}
	}()
}

// stopWatch ends the watch and forgets the pods' steps: the next window starts afresh.
func (ev *poolEvents) stopWatch() {
	ev.mu.Lock()
	stop, done := ev.watch, ev.watched
	ev.watch = nil
	ev.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
	ev.mu.Lock()
	ev.pods = map[string]podStep{}
	ev.mu.Unlock()
}

func (c *Cluster) listGateway(ctx context.Context) ([]corev1.Pod, error) {
	s := selectors[gateway.Gateway]
	ctx, cancel := context.WithTimeout(ctx, gateway.AdminTimeout)
	defer cancel()
	return c.o.Kube.List(ctx, s.ns, s.sel)
}

// observe records the steps between the last list and this one.
func (ev *poolEvents) observe(pods []corev1.Pod, first bool) {
	now := time.Now()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range pods {
		seen[p.Name] = true
		step := stepOf(p)
		last, known := ev.pods[p.Name]
		ev.pods[p.Name] = step
		if first || last == step {
			continue
		}
		ev.planned[p.Name] = true
		if !known && step != "started" {
			ev.steps = append(ev.steps, gateway.Disruption{Time: now, Kind: "started", Pod: p.Name, Detail: "created by the Deployment"})
		}
		ev.steps = append(ev.steps, gateway.Disruption{Time: now, Kind: string(step), Pod: p.Name, Detail: stepDetail(p, step)})
	}
	for name, last := range ev.pods {
		if !seen[name] {
			delete(ev.pods, name)
			ev.planned[name] = true
			ev.steps = append(ev.steps, gateway.Disruption{Time: now, Kind: "gone", Pod: name, Detail: fmt.Sprintf("deleted (last seen %s)", last)})
		}
	}
}

// stepOf is where a pod is in its life, as the Service and the Deployment see it.
func stepOf(p corev1.Pod) podStep {
	switch {
	case p.DeletionTimestamp != nil:
		return "terminating"
	case kube.Ready(p):
		return "ready"
	}
	return "started"
}

func stepDetail(p corev1.Pod, s podStep) string {
	switch s {
	case "ready":
		return "passed its readiness probe: in the Service's endpoints"
	case "terminating":
		return "out of the endpoints; pilot-agent drains its listeners for terminationDrainDuration, then Envoy is killed"
	}
	return "created by the Deployment, not ready yet"
}

// plannedPods are the pods the events started or removed (a copy).
func (ev *poolEvents) plannedPods() map[string]bool {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	out := make(map[string]bool, len(ev.planned))
	for k := range ev.planned {
		out[k] = true
	}
	return out
}
