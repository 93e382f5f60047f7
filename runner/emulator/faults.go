package emulator

import (
	"fmt"
	"time"
)

// Faults a test or a user can inject into a running pool, each recorded as an Event so a run
// can say what disturbed it and when.

// KillPod kills gateway pod i as the kubelet kills a container: its listeners and admin port
// close, every connection on it is reset, and the balancer stops sending it connections.
func (p *Pool) KillPod(i int) error {
	pod, err := p.gatewayPod(i)
	if err != nil {
		return err
	}
	if !pod.Up() {
		return fmt.Errorf("pod %s is already down", pod.Name)
	}
	open := pod.OpenConnections()
	pod.stop()
	pod.stopAdmin()
	p.event("kill", pod.Name, fmt.Sprintf("%d connections reset", open))
	return nil
}

// RestartPod brings a killed pod back as a restarted container: same name, same addresses
// (unless another socket took a port meanwhile), a fresh process whose counters start from
// zero and whose listeners run the current setup.
func (p *Pool) RestartPod(i int) error {
	pod, err := p.gatewayPod(i)
	if err != nil {
		return err
	}
	if pod.Up() {
		return fmt.Errorf("pod %s is up; kill it first", pod.Name)
	}
	if err := p.startPod(pod, 0, false); err != nil {
		return err
	}
	p.event("restart", pod.Name, "counters start from zero")
	return nil
}

// StallWorker stops worker w of gateway pod i for d, as a thread stuck in one long piece of
// work does: everything pinned to it waits, the rest of the pod carries on.
func (p *Pool) StallWorker(i, w int, d time.Duration) error {
	pod, err := p.gatewayPod(i)
	if err != nil {
		return err
	}
	if w < 0 || w >= len(pod.workers) {
		return fmt.Errorf("pod %s has workers 0..%d, not %d", pod.Name, len(pod.workers)-1, w)
	}
	if d <= 0 || d > time.Minute {
		return fmt.Errorf("stall %s: allowed (0, 1m]", d)
	}
	pod.workers[w].Book(nil, d)
	p.event("stall", pod.Name, fmt.Sprintf("worker %d stuck for %s", w, d))
	return nil
}

func (p *Pool) gatewayPod(i int) (*Pod, error) {
	if i < 0 || i >= len(p.gateway) {
		return nil, fmt.Errorf("gateway pod %d: allowed 0..%d", i, len(p.gateway)-1)
	}
	return p.gateway[i], nil
}
