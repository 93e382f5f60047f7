package emulator

import (
	"context"
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/model"
)

// RollingRestart replaces every gateway pod with a new one as the Deployment controller does
// for a new pod template (kubectl rollout restart): at most replicas+surge pods exist at
// once and at least replicas-unavailable are ready (pkg/controller/deployment rolling.go:
// reconcileNewReplicaSet scales the new ReplicaSet up to the surge, reconcileOldReplicaSets
// scales the old one down while availability allows). A new pod counts once its readiness
// probe passes; an old one leaves through the termination sequence. It returns at once; the
// rollout goes on in the background and each step is recorded.
func (p *Pool) RollingRestart(ctx context.Context, surge, unavailable int, lc Lifecycle) error {
	old := p.live()
	replicas := len(old)
	if replicas == 0 {
		return fmt.Errorf("rolling restart: no gateway pod is running")
	}
	if surge < 0 || unavailable < 0 || surge+unavailable == 0 {
		return fmt.Errorf("rolling restart: maxSurge %d and maxUnavailable %d cannot both be 0", surge, unavailable)
	}
	p.planned("rollout", "", fmt.Sprintf("rolling restart of %d pods: maxSurge %d, maxUnavailable %d", replicas, surge, unavailable))
	p.lifecycle.Add(1)
	go func() {
		defer p.lifecycle.Done()
		started := time.Now()
		if err := p.roll(ctx, old, surge, unavailable, lc); err != nil {
			p.planned("rollout-stopped", "", err.Error())
			return
		}
		p.planned("rollout-done", "", fmt.Sprintf("%d pods replaced in %s", replicas, time.Since(started).Round(10*time.Millisecond)))
	}()
	return nil
}

// roll is the controller's loop, woken every 10 ms instead of by pod events.
func (p *Pool) roll(ctx context.Context, old []*Pod, surge, unavailable int, lc Lifecycle) error {
	replicas := len(old)
	isOld := map[*Pod]bool{}
	for _, o := range old {
		isOld[o] = true
	}
	var made []*Pod
	deadline := time.Now().Add(10*time.Minute + 2*time.Duration(replicas)*(lc.ReadyDelay+lc.TerminationDrain))
	for {
		if p.closed.Load() {
			return fmt.Errorf("the pool closed during the rollout")
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the rollout did not finish by its deadline")
		}
		st, oldLeft := model.ObserveRollout(replicas, surge, unavailable, p.live(), isOld, made)
		switch st.Next() {
		case model.RolloutDone:
			return nil
		case model.RolloutStart:
			if slot := p.freeSlot(); slot != nil {
				if err := p.startPod(slot, lc.ReadyDelay, true); err != nil {
					return err
				}
				made = append(made, slot)
				continue
			}
			// No free slot: an old pod must go first, if the controller may take one now.
			if st.Made = replicas; st.Next() == model.RolloutTerminate {
				p.terminate(oldLeft[0], lc.TerminationDrain)
				continue
			}
		case model.RolloutTerminate:
			p.terminate(oldLeft[0], lc.TerminationDrain)
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}
