package sim

import (
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// The gateway Deployment's pods coming and going, in virtual time: the socket emulator's
// lifecycle (runner/emulator lifecycle.go, rollout.go) with the same rules from runner/model
// (model.Rollout for the controller's next step, model.BackOff for the kubelet's restart,
// model.Lifecycle for readiness and Istio's termination), each step on the pool's timeline.

// Event is a step on the pool's timeline.
type Event = model.Event

// record adds a step to the timeline at the virtual time.
func (p *Pool) record(kind, pod, detail string, planned bool) {
	p.Timeline = append(p.Timeline, Event{Time: p.Sim.Now(), Kind: kind, Pod: pod, Detail: detail, Planned: planned})
}

// pending counts the lifecycle steps still to come (a readiness, a termination, a restart, a
// rollout): set-up between windows waits for them, as the emulator's waitLifecycle does.
func (p *Pool) settled() bool { return p.pending == 0 }

// later runs f after d as a lifecycle step the pool waits for before the next set-up.
func (p *Pool) later(d time.Duration, f func()) {
	p.pending++
	p.Sim.After(d, func() { p.pending--; f() })
}

// Replicas counts the gateway pods that exist and are not terminating.
func (p *Pool) Replicas() int { return len(p.live()) }

// live lists the gateway pods that exist and are not terminating, oldest slot first.
func (p *Pool) live() []*Pod {
	var out []*Pod
	for _, pod := range p.gateway {
		if pod.exists && !pod.terminating {
			out = append(out, pod)
		}
	}
	return out
}

// slot returns slot i, adding empty slots up to it: the simulated Deployment has room for
// MaxPods pods, made as a scenario first needs them.
func (p *Pool) slot(i int) *Pod {
	for len(p.gateway) <= i {
		p.gateway = append(p.gateway, p.newPod(roleGateway, len(p.gateway)))
	}
	return p.gateway[i]
}

// freeSlot is the first slot with no pod in it.
func (p *Pool) freeSlot() *Pod {
	for i := 0; i < MaxPods; i++ {
		if pod := p.slot(i); !pod.exists {
			return pod
		}
	}
	return nil
}

// SetReplicas puts the pool in the state a scenario starts from (the emulator's SetReplicas):
// the first n slots hold a pod, the others none. It first runs the pool until an earlier
// scenario's steps are over.
func (p *Pool) SetReplicas(n int, stop func() bool) error {
	if n < 1 || n > MaxPods {
		return fmt.Errorf("%d gateway pods: the simulated pool has slots for 1..%d", n, MaxPods)
	}
	p.settle(stop)
	for i := 0; i < max(n, len(p.gateway)); i++ {
		pod := p.slot(i)
		switch {
		case i < n && !pod.exists:
			p.startPod(pod, 0, false)
		case i < n:
			pod.ready = pod.up // a container down stays down until its back-off restarts it
		case pod.exists:
			pod.stop()
			pod.exists = false
		}
	}
	return nil
}

// settle runs the pool until no lifecycle step is pending (bounded: a rollout that cannot end
// gives up at its deadline).
func (p *Pool) settle(stop func() bool) {
	for !p.settled() && p.Sim.Pending() > 0 && (stop == nil || !stop()) {
		p.Sim.RunUntil(p.Sim.Tick()+int64(100*time.Millisecond), stop)
	}
}

// startPod starts a pod in a slot with the listener in force, ready after readyDelay.
func (p *Pool) startPod(pod *Pod, readyDelay time.Duration, record bool) {
	pod.start(p.listener(p.setup))
	pod.ready = readyDelay <= 0
	if record {
		p.record("start", pod.Name, fmt.Sprintf("new pod; ready in %s", readyDelay), true)
	}
	if readyDelay > 0 {
		p.later(readyDelay, func() {
			if pod.up && !pod.terminating {
				pod.ready = true
				if record {
					p.record("ready", pod.Name, "readiness probe passed: in the Service's endpoints", true)
				}
			}
		})
	}
}

// ScaleTo sets the Deployment's replicas during a window: new pods in free slots, ready after
// the delay; removed pods, the newest first (pkg/controller/replicaset getPodsToDelete), run
// Istio's termination sequence.
func (p *Pool) ScaleTo(n int, lc model.Lifecycle) error {
	if n < 1 || n > MaxPods {
		return fmt.Errorf("scale to %d gateway pods: the simulated pool has slots for 1..%d", n, MaxPods)
	}
	cur := p.live()
	p.record("scale", "", fmt.Sprintf("replicas %d -> %d", len(cur), n), true)
	for i := len(cur) - 1; i >= n; i-- {
		p.terminate(cur[i], lc.TerminationDrain)
	}
	for add := n - len(cur); add > 0; add-- {
		p.startPod(p.freeSlot(), lc.ReadyDelay, true)
	}
	return nil
}

// terminate is Istio's termination sequence (the emulator's terminate, which cites it): out of
// the endpoints at once, every connection told to drain at its next response, Envoy killed
// after the drain with what is still open reset.
func (p *Pool) terminate(pod *Pod, drain time.Duration) {
	pod.terminating = true
	for c := range pod.conns {
		c.listenerDraining = true
	}
	p.record("terminate", pod.Name, fmt.Sprintf("SIGTERM: out of the endpoints, %d connections told to drain; killed in %s", len(pod.conns), drain), true)
	p.later(drain, func() {
		open := len(pod.conns)
		pod.stop()
		pod.terminating, pod.exists = false, false
		p.record("gone", pod.Name, fmt.Sprintf("Envoy killed after the drain: %d connections still open were reset", open), true)
	})
}

// Push is a config push that replaces the gateway's listener (the emulator's Push): every
// connection of every live pod drains over the listener drain time.
func (p *Pool) Push() int {
	p.gen++
	cfg := p.listener(p.setup)
	drained := 0
	for _, pod := range p.live() {
		if pod.up {
			drained += len(pod.conns)
			pod.apply(cfg, true)
		}
	}
	p.record("push", "", fmt.Sprintf("listener update, generation %d: %d connections draining", p.gen, drained), true)
	return drained
}

// KillContainer kills the i-th live gateway pod's container: its connections reset, the
// kubelet restarts it after its crash back-off (model.BackOff), ready after the ready delay.
func (p *Pool) KillContainer(i int, lc model.Lifecycle) error {
	cur := p.live()
	if i < 0 || i >= len(cur) {
		return fmt.Errorf("kill pod %d: the pool has %d pods (0..%d)", i, len(cur), len(cur)-1)
	}
	pod := cur[i]
	open := len(pod.conns)
	pod.stop()
	delay := pod.backoff.Delay(p.Sim.Now())
	p.record("kill", pod.Name, fmt.Sprintf("container killed: %d connections reset; the kubelet restarts it in %s", open, delay), true)
	p.later(delay, func() {
		if !pod.up && pod.exists {
			pod.restarts++
			p.startPod(pod, lc.ReadyDelay, true)
		}
	})
	return nil
}

// rolloutTick is how often the simulated Deployment controller looks again (the emulator's
// loop is woken every 10 ms too).
const rolloutTick = 10 * time.Millisecond

// RollingRestart replaces every gateway pod as the Deployment controller does (model.Rollout:
// at most replicas+surge pods, at least replicas-unavailable ready), each old pod leaving
// through the termination sequence.
func (p *Pool) RollingRestart(surge, unavailable int, lc model.Lifecycle) error {
	old := p.live()
	replicas := len(old)
	if replicas == 0 {
		return fmt.Errorf("rolling restart: no gateway pod is running")
	}
	if surge < 0 || unavailable < 0 || surge+unavailable == 0 {
		return fmt.Errorf("rolling restart: maxSurge %d and maxUnavailable %d cannot both be 0", surge, unavailable)
	}
	p.record("rollout", "", fmt.Sprintf("rolling restart of %d pods: maxSurge %d, maxUnavailable %d", replicas, surge, unavailable), true)
	isOld := map[*Pod]bool{}
	for _, o := range old {
		isOld[o] = true
	}
	var made []*Pod
	started := p.Sim.Now()
	deadline := p.Sim.Tick() + int64(10*time.Minute+2*time.Duration(replicas)*(lc.ReadyDelay+lc.TerminationDrain))
	p.pending++
	var step func()
	step = func() {
		for {
			if p.Sim.Tick() > deadline {
				p.pending--
				p.record("rollout-stopped", "", "the rollout did not finish by its deadline", true)
				return
			}
			st, oldLeft := model.ObserveRollout(replicas, surge, unavailable, p.live(), isOld, made)
			switch st.Next() {
			case model.RolloutDone:
				p.pending--
				p.record("rollout-done", "", fmt.Sprintf("%d pods replaced in %s", replicas, p.Sim.Now().Sub(started).Round(10*time.Millisecond)), true)
				return
			case model.RolloutStart:
				slot := p.freeSlot()
				p.startPod(slot, lc.ReadyDelay, true)
				made = append(made, slot)
				continue
			case model.RolloutTerminate:
				p.terminate(oldLeft[0], lc.TerminationDrain)
				continue
			}
			p.Sim.After(rolloutTick, step)
			return
		}
	}
	step()
	return nil
}

// Size is a gateway pod template's workers and CPU, and the work a request costs them.
type Size struct {
	Workers              int
	CPULimit, CPURequest int64 // millicores; 0 keeps the pool's own
	ServiceTime          time.Duration
}

// Resize gives every gateway pod a new pod template (the emulator's Resize): each is replaced
// by one of the new size, ready at once, counters from zero; zero fields keep the size the
// pool was made with. It is set-up, not an event.
func (p *Pool) Resize(s Size, stop func() bool) error {
	p.settle(stop)
	cfg := p.cfg
	cfg.Workers, cfg.CPULimit, cfg.CPURequest = p.base.Workers, p.base.CPULimit, p.base.CPURequest
	cfg.Cost.ServiceTime = p.base.Cost.ServiceTime
	if s.Workers > 0 {
		cfg.Workers = s.Workers
	}
	if s.CPULimit > 0 {
		cfg.CPULimit = s.CPULimit
		if s.CPURequest == 0 && p.base.CPURequest > s.CPULimit {
			cfg.CPURequest = 0
		}
	}
	if s.CPURequest > 0 {
		cfg.CPURequest = s.CPURequest
	}
	if s.ServiceTime > 0 {
		cfg.Cost.ServiceTime = s.ServiceTime
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	same := cfg.Workers == p.cfg.Workers && cfg.Cost == p.cfg.Cost && p.cpuLimitOf(cfg) == p.cpuLimitOf(p.cfg) &&
		p.cpuRequestOf(cfg) == p.cpuRequestOf(p.cfg)
	p.cfg = cfg
	if same {
		return nil
	}
	for _, pod := range p.gateway {
		if !pod.exists {
			continue
		}
		up := pod.up
		pod.stop()
		if up {
			p.startPod(pod, 0, false)
		}
	}
	return nil
}
