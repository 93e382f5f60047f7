package model

import (
	"sync"
	"time"
)

// A gateway pod's life: a rolling restart's next step, and a crashed container's restart.

// RolloutAction is what the Deployment controller does next in a rolling restart.
type RolloutAction int

const (
	// RolloutWait: nothing can move until a pod becomes ready or goes.
	RolloutWait RolloutAction = iota
	// RolloutStart: start a new pod.
	RolloutStart
	// RolloutTerminate: terminate the oldest old pod (Istio's termination sequence).
	RolloutTerminate
	// RolloutDone: no old pod left, every new one serving.
	RolloutDone
)

// Rollout is a rolling restart's state as the Deployment controller sees it.
type Rollout struct {
	Replicas, Surge, Unavailable int
	// OldLeft are the old pods still there, Made the new pods started, NewReady those serving,
	// Ready every pod serving, VictimServing whether the oldest old pod still serves.
	OldLeft, Made, NewReady, Ready int
	VictimServing                  bool
}

// Next is the controller's next step (pkg/controller/deployment/rolling.go reconcileNewReplicaSet
// and reconcileOldReplicaSets): start new pods while they stay within replicas + maxSurge, and
// take an old one away only while the pods ready afterwards stay at least replicas -
// maxUnavailable.
func (r Rollout) Next() RolloutAction {
	switch {
	case r.OldLeft == 0 && r.NewReady == r.Replicas:
		return RolloutDone
	case r.Made < r.Replicas && r.OldLeft+r.Made < r.Replicas+r.Surge:
		return RolloutStart
	case r.OldLeft > 0:
		after := r.Ready
		if r.VictimServing {
			after--
		}
		if after >= r.Replicas-r.Unavailable {
			return RolloutTerminate
		}
	}
	return RolloutWait
}

// The kubelet's crash back-off (pkg/kubelet/kuberuntime: initialCrashBackOff, maxCrashBackOff).
const (
	InitialCrashBackOff = 10 * time.Second
	MaxCrashBackOff     = 300 * time.Second
)

// BackOff is a container's crash back-off.
type BackOff struct {
	mu    sync.Mutex
	last  time.Time
	next  time.Duration
	Count int
}

// Delay is how long the kubelet waits, as of now, before restarting a container that just died:
// nothing the first time, or when the last restart is more than twice the cap ago; else the
// back-off, which then doubles up to the cap.
func (b *BackOff) Delay(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Count++
	if b.last.IsZero() || now.Sub(b.last) > 2*MaxCrashBackOff {
		b.next, b.last = InitialCrashBackOff, now
		return 0
	}
	d := b.next
	b.next = min(2*b.next, MaxCrashBackOff)
	b.last = now
	return d
}

// Lifecycle is how a pod comes and goes: how long after its start it becomes ready, and how long
// after it is told to terminate it lingers (Istio's termination: out of the Service's endpoints
// at once, every connection told to drain at its next response, the container gone after the
// drain time: pilot-agent's terminationDrainDuration).
type Lifecycle struct {
	ReadyDelay       time.Duration
	TerminationDrain time.Duration
}

// RolloutPod is a pod as the Deployment controller watches it during a rolling restart.
type RolloutPod interface {
	comparable
	Serving() bool
}

// ObserveRollout is the controller's view of a rolling restart: live are the pods that exist
// and are not terminating, oldest slot first; old, the pods the rollout replaces; made, the new
// pods started so far. It returns the state and the old pods still there, the oldest first.
func ObserveRollout[P RolloutPod](replicas, surge, unavailable int, live []P, old map[P]bool, made []P) (Rollout, []P) {
	var oldLeft []P
	ready, newReady := 0, 0
	for _, pod := range live {
		if old[pod] {
			oldLeft = append(oldLeft, pod)
		}
		if pod.Serving() {
			ready++
		}
	}
	for _, n := range made {
		if n.Serving() {
			newReady++
		}
	}
	return Rollout{Replicas: replicas, Surge: surge, Unavailable: unavailable, OldLeft: len(oldLeft), Made: len(made),
		NewReady: newReady, Ready: ready, VictimServing: len(oldLeft) > 0 && oldLeft[0].Serving()}, oldLeft
}
