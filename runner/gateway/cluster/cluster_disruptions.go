package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/gateway"
)

// podsSeen remembers the gateway pods of the last Pods(gateway.Gateway) call, which the suite makes at
// the start of each scenario, so that Disruptions can tell which of them went away.
type podsSeen struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *podsSeen) set(pods []gateway.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = map[string]bool{}
	for _, p := range pods {
		s.names[p.Name] = true
	}
}

func (s *podsSeen) get() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names
}

// Disruptions implements Disrupted for a real cluster, from what Kubernetes records: an Envoy
// container that terminated and restarted since the time, a gateway pod that started since
// then (a replacement, or a scale-up), and a pod of the scenario's start that is no longer
// ready. Envoy's own counters show a restart too (the analysis sees them go back to zero);
// this adds what and when. Pods the scenario's own events started, deleted or replaced are
// its timeline (Timeline), not disruptions.
func (c *Cluster) Disruptions(since time.Time) []gateway.Disruption {
	planned := c.events().plannedPods()
	s := selectors[gateway.Gateway]
	ctx, cancel := context.WithTimeout(context.Background(), gateway.AdminTimeout)
	defer cancel()
	pods, err := c.o.Kube.Pods(ctx, s.ns, s.sel)
	if err != nil {
		return []gateway.Disruption{{Time: time.Now(), Kind: "unknown", Detail: "could not list the gateway pods to check for restarts: " + err.Error()}}
	}
	var out []gateway.Disruption
	now := map[string]bool{}
	for _, p := range pods {
		now[p.Name] = true
		if t := p.CreationTimestamp.Time; t.After(since) && !planned[p.Name] {
			out = append(out, gateway.Disruption{Time: t, Kind: "new-pod", Pod: p.Name, Detail: "joined the pool during the scenario (a replacement or a scale-up)"})
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.Time.After(since) {
				out = append(out, gateway.Disruption{Time: t.FinishedAt.Time, Kind: "restart", Pod: p.Name,
					Detail: fmt.Sprintf("container %s terminated (%s, exit code %d) and restarted; %d restarts in all", cs.Name, t.Reason, t.ExitCode, cs.RestartCount)})
			}
		}
	}
	for name := range c.seen.get() {
		if !now[name] && !planned[name] {
			out = append(out, gateway.Disruption{Time: time.Now(), Kind: "gone", Pod: name, Detail: "ready at the scenario's start, not ready or deleted at its end"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}
