package emulator

import (
	"context"
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// The gateway Deployment's pods coming and going under load: scale, rolling restart, config
// push, a container killed. The pool's gateway pods are slots; a slot that is down is a pod
// that does not exist (no listener, no admin), and starting it is a new pod whose counters
// start from zero. Each step is recorded as a planned Event, so a run can put it on its
// timeline without reading it as a disruption.

// Lifecycle is how the pool's pods come and go.
type Lifecycle = model.Lifecycle

// Serving reports whether the Service sends the pod new connections: it exists, has passed
// its readiness probe and is not terminating.
func (p *Pod) Serving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up && p.ready && !p.terminating
}

// Exists reports whether the slot holds a pod, terminating or with its container down
// included: a slot scaled in or emptied by a rollout holds none, as a deleted pod is gone.
func (p *Pod) Exists() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.absent
}

// Replicas counts the gateway pods that exist and are not terminating.
func (p *Pool) Replicas() int {
	n := 0
	for _, pod := range p.gateway {
		pod.mu.Lock()
		if !pod.absent && !pod.terminating {
			n++
		}
		pod.mu.Unlock()
	}
	return n
}

// SetReplicas puts the pool in the state a scenario starts from, before its window: the
// first n slots hold a pod, each kept as it is or, where the slot is empty, a new pod ready at
// once; the others are stopped quietly. It first waits for the steps of an earlier scenario's events
// (a termination still draining) to end, and is not recorded: it is set-up, not an event.
func (p *Pool) SetReplicas(ctx context.Context, n int) error {
	if n < 1 || n > len(p.gateway) {
		return fmt.Errorf("%d gateway pods: this pool has slots for 1..%d (--pods)", n, len(p.gateway))
	}
	if err := p.waitLifecycle(ctx); err != nil {
		return err
	}
	for i, pod := range p.gateway {
		switch exists := pod.Exists(); {
		case i < n && !exists:
			if err := p.startPod(pod, 0, false); err != nil {
				return err
			}
		case i < n:
			// A pod whose container is down (killed, OOM) stays down until the kubelet's
			// back-off restarts it: a new scenario does not revive it.
			pod.mu.Lock()
			pod.ready = pod.up
			pod.mu.Unlock()
		case exists:
			pod.stop()
			pod.stopAdmin()
			pod.mu.Lock()
			pod.absent = true
			pod.mu.Unlock()
		}
	}
	return nil
}

// ScaleTo sets the Deployment's replicas during a window: new pods start in free slots and
// turn ready after the ready delay; removed pods, the newest first (the ReplicaSet
// controller deletes the youngest pods: pkg/controller/replicaset getPodsToDelete ranks by
// ActivePodsWithRanks), run the termination sequence.
func (p *Pool) ScaleTo(n int, lc Lifecycle) error {
	if n < 1 || n > len(p.gateway) {
		return fmt.Errorf("scale to %d gateway pods: this pool has slots for 1..%d (--pods)", n, len(p.gateway))
	}
	cur := p.live()
	p.planned("scale", "", fmt.Sprintf("replicas %d -> %d", len(cur), n))
	for i := len(cur) - 1; i >= n; i-- {
		p.terminate(cur[i], lc.TerminationDrain)
	}
	for add := n - len(cur); add > 0; add-- {
		slot := p.freeSlot()
		if slot == nil {
			return fmt.Errorf("scale to %d: no free pod slot (start the pool with more --pods)", n)
		}
		if err := p.startPod(slot, lc.ReadyDelay, true); err != nil {
			return err
		}
	}
	return nil
}

// live lists the pods that exist and are not terminating, oldest slot first.
func (p *Pool) live() []*Pod {
	var out []*Pod
	for _, pod := range p.gateway {
		pod.mu.Lock()
		if !pod.absent && !pod.terminating {
			out = append(out, pod)
		}
		pod.mu.Unlock()
	}
	return out
}

// freeSlot is a slot with no pod in it.
func (p *Pool) freeSlot() *Pod {
	for _, pod := range p.gateway {
		if !pod.Exists() {
			return pod
		}
	}
	return nil
}

// startPod starts a pod in a slot with the pool's current setup: a new pod, or a restarted
// container (RestartPod) whose counters start from zero. It is ready (in the Service's
// endpoints) after readyDelay, at once for 0.
func (p *Pool) startPod(pod *Pod, readyDelay time.Duration, record bool) error {
	p.mu.Lock()
	cfg := p.listenerConfig(p.setup, p.generation)
	p.mu.Unlock()
	pod.mu.Lock()
	port, adminPort := pod.port, pod.adminPort
	pod.ready, pod.terminating, pod.absent = readyDelay <= 0, false, false
	pod.mu.Unlock()
	pod.build(cfg)
	// A new pod keeps its slot's ports when it can; another socket may have taken one since
	// the last pod left (a new pod in Kubernetes has a new address anyway), so it takes
	// another port then: the balancer and the pod listing read the current ones.
	if err := pod.listen(port); err != nil {
		if err = pod.listen(0); err != nil {
			return err
		}
	}
	if err := pod.startAdmin(adminPort); err != nil {
		if err = pod.startAdmin(0); err != nil {
			return err
		}
	}
	if record {
		p.planned("start", pod.Name, fmt.Sprintf("new pod; ready in %s", readyDelay))
	}
	if readyDelay > 0 {
		p.lifecycle.Add(1)
		time.AfterFunc(readyDelay, func() {
			defer p.lifecycle.Done()
			pod.mu.Lock()
			ok := pod.up && !pod.terminating
			pod.ready = ok
			pod.mu.Unlock()
			if ok && record {
				p.planned("ready", pod.Name, "readiness probe passed: in the Service's endpoints")
			}
		})
	}
	return nil
}

// terminate runs the termination sequence Istio gives a gateway pod. The pod leaves the
// Service's endpoints (kube-proxy sends it no new connection; established ones stay).
// The kubelet's SIGTERM reaches pilot-agent, which posts drain_listeners?graceful to Envoy
// (pkg/envoy/agent.go terminate, pkg/envoy/admin.go DrainListeners); Istio starts Envoy with
// --drain-strategy immediate (pkg/envoy/proxy.go args), so every connection is drained at
// once: HTTP/2 connections get GOAWAY at their next response
// (ConnectionManagerImpl::ActiveStream, drain_close_.drainClose(), counted in
// downstream_cx_drain_close) and Envoy's /ready answers DRAINING. After
// terminationDrainDuration pilot-agent kills Envoy; connections still open are reset.
func (p *Pool) terminate(pod *Pod, drain time.Duration) {
	pod.mu.Lock()
	pod.terminating = true
	conns := pod.connsLocked()
	pod.mu.Unlock()
	for _, sc := range conns {
		sc.listenerDraining.Store(true)
	}
	p.planned("terminate", pod.Name, fmt.Sprintf("SIGTERM: out of the endpoints, %d connections told to drain; killed in %s", len(conns), drain))
	p.lifecycle.Add(1)
	time.AfterFunc(drain, func() {
		defer p.lifecycle.Done()
		open := pod.OpenConnections()
		pod.stop()
		pod.stopAdmin()
		pod.mu.Lock()
		pod.terminating, pod.absent = false, true
		pod.mu.Unlock()
		p.planned("gone", pod.Name, fmt.Sprintf("Envoy killed after the drain: %d connections still open were reset", open))
	})
}

// Push is a config push that changes the gateway's listener, as an EnvoyFilter update does:
// istiod sends a new listener whose filter chains differ, and Envoy drains every connection
// of the changed chains (ListenerImpl::diffFilterChain, ListenerManagerImpl::drainFilterChains)
// over the listener drain time. Every chain carries the changed HCM, so every connection
// drains.
func (p *Pool) Push() int {
	p.mu.Lock()
	p.generation++
	cfg := p.listenerConfig(p.setup, p.generation)
	gen := p.generation
	p.mu.Unlock()
	drained := 0
	for _, pod := range p.live() {
		drained += pod.apply(cfg, true, p.cfg.ListenerDrainTime)
	}
	p.planned("push", "", fmt.Sprintf("listener update, generation %d: %d connections draining", gen, drained))
	return drained
}

// KillContainer kills the container of the i-th live gateway pod (0 is the oldest slot): its
// connections are reset, and the kubelet restarts it after its crash back-off (nothing the
// first time); the restarted container turns ready after the ready delay.
func (p *Pool) KillContainer(i int, lc Lifecycle) error {
	cur := p.live()
	if i < 0 || i >= len(cur) {
		return fmt.Errorf("kill pod %d: the pool has %d pods (0..%d)", i, len(cur), len(cur)-1)
	}
	pod := cur[i]
	open := pod.OpenConnections()
	pod.stop()
	pod.stopAdmin()
	delay := pod.backoff.Delay(time.Now())
	p.planned("kill", pod.Name, fmt.Sprintf("container killed: %d connections reset; the kubelet restarts it in %s", open, delay))
	p.lifecycle.Add(1)
	time.AfterFunc(delay, func() {
		defer p.lifecycle.Done()
		if p.closed.Load() || pod.Up() || !pod.Exists() {
			return
		}
		if err := p.startPod(pod, lc.ReadyDelay, true); err != nil {
			p.planned("restart-failed", pod.Name, err.Error())
		}
	})
	return nil
}

// waitLifecycle waits until no termination, readiness or restart timer is pending.
func (p *Pool) waitLifecycle(ctx context.Context) error {
	done := make(chan struct{})
	go func() { p.lifecycle.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Size is a gateway pod template's workers and CPU, and the work a request costs them.
type Size struct {
	Workers    int   // Envoy's concurrency
	CPULimit   int64 // millicores
	CPURequest int64 // millicores
	// ServiceTime is the work per request: a gateway image whose filters cost more, as a
	// different build of the gateway would.
	ServiceTime time.Duration
}

// Resize gives every gateway pod that exists a new pod template's workers, CPU and request
// cost, as a change to the gateway's proxy.istio.io/config concurrency, container resources
// or filters does: each pod is replaced by one with the new size (its counters start from
// zero), ready at once. Zero fields keep the size the pool started with. Like SetReplicas it is
// set-up between windows, not an event: it waits for earlier events' steps and records nothing.
func (p *Pool) Resize(ctx context.Context, s Size) error {
	workers, cpuLimit, cpuRequest := s.Workers, s.CPULimit, s.CPURequest
	if err := p.waitLifecycle(ctx); err != nil {
		return err
	}
	cfg := p.cfg
	if workers > 0 {
		cfg.Workers = workers
	} else {
		cfg.Workers = p.base.Workers
	}
	cfg.CPULimit, cfg.CPURequest = p.base.CPULimit, p.base.CPURequest
	if cpuLimit > 0 {
		cfg.CPULimit = cpuLimit
	}
	if cpuRequest > 0 {
		cfg.CPURequest = cpuRequest
	}
	if cpuLimit > 0 && cpuRequest == 0 && p.base.CPURequest > cpuLimit {
		cfg.CPURequest = 0 // the pool's own request would sit above the new limit
	}
	cfg.Model.ServiceTime = p.base.Model.ServiceTime
	if s.ServiceTime > 0 {
		cfg.Model.ServiceTime = s.ServiceTime
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	if cfg.Workers == p.cfg.Workers && cfg.cpuLimit() == p.cfg.cpuLimit() && cfg.cpuRequest() == p.cfg.cpuRequest() &&
		cfg.Model == p.cfg.Model {
		return nil
	}
	p.mu.Lock()
	p.cfg = cfg
	p.mu.Unlock()
	for _, pod := range p.gateway {
		if !pod.Exists() {
			continue
		}
		up := pod.Up()
		pod.stop()
		pod.stopAdmin()
		if !up {
			continue // a container the kubelet has not restarted yet comes back with the new size
		}
		if err := p.startPod(pod, 0, false); err != nil {
			return err
		}
	}
	return nil
}

// Size is each gateway pod's workers and CPU limit and request (millicores, 0: no limit).
func (p *Pool) Size() (workers int, cpuLimit, cpuRequest int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.Workers, p.cfg.cpuLimit(), p.cfg.cpuRequest()
}
