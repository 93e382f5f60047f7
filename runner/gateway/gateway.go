// Package gateway is the seam between the runner and the gateway pool it measures. A Target
// resolves a scenario for itself, puts it in force on the pool, lists its pods, reads each
// pod's Envoy admin, and runs the scenario's client against it. Everything after reading the
// stats is one code path for every target. Each kind of target lives in a package of its own
// (local, cluster) and registers a Driver; Open starts one by kind.
package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// Roles of pods.
const (
	Gateway  = "gateway"
	Waypoint = "waypoint"
	// Ztunnel is the role of ambient's node proxies (their metrics are on :15020/metrics).
	Ztunnel = "ztunnel"
	// Kubelet is the role of the gateway pods' nodes' kubelets: Admin reads their cAdvisor
	// metrics (KubeletCAdvisor), the proxy containers' CPU and CFS throttling.
	Kubelet = "kubelet"
)

// KubeletCAdvisor is the kubelet's path for cAdvisor's container metrics.
const KubeletCAdvisor = "/metrics/cadvisor"

// Pod names one pod of the target.
type Pod struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Namespace string `json:"namespace,omitempty"`
	// Admin is where the pod's Envoy admin can be reached, for display.
	Admin string `json:"admin"`
}

// Info describes the target.
type Info struct {
	Name        string         `json:"name"`
	Pods        int            `json:"pods"`
	Concurrency int            `json:"concurrency"`
	Waypoints   int            `json:"waypoints"`
	Endpoint    string         `json:"endpoint"`
	Details     map[string]any `json:"details,omitempty"`
	// Departures are where this target runs every scenario differently from the lab (the
	// local target's short listener drain), shown with each scenario's own.
	Departures []stacks.Departure `json:"departures,omitempty"`
	// ClientRTTMs and UpstreamRTTMs are the round-trip times the target adds between the
	// clients and the gateway and between the gateway and its upstreams (the local target's
	// --rtt); 0 where the network's own is all there is.
	ClientRTTMs float64 `json:"client_rtt_ms,omitempty"`
	// EnvoyDefaults is the Envoy release whose defaults the gateway runs with for knobs a
	// scenario leaves unset ("1.35" on Istio 1.27, "1.36" from Istio 1.28).
	EnvoyDefaults string  `json:"envoy_defaults,omitempty"`
	UpstreamRTTMs float64 `json:"upstream_rtt_ms,omitempty"`
}

// Target is a gateway pool the runner can drive.
type Target interface {
	// Info describes the pool.
	Info(ctx context.Context) (Info, error)
	// Resolve returns a catalog scenario as this target runs it, and where that departs from
	// the lab's values (each departure is shown next to the lab value in the reports).
	Resolve(lab *stacks.Scenario) (stacks.Scenario, []stacks.Departure)
	// Apply puts a scenario (already resolved for this target) in force on every gateway pod.
	Apply(ctx context.Context, sc stacks.Scenario) error
	// Pods lists the pods of a role.
	Pods(ctx context.Context, role string) ([]Pod, error)
	// Admin performs GET path on a pod's Envoy admin.
	Admin(ctx context.Context, pod Pod, path string) ([]byte, error)
	// Load runs a client against the pool.
	Load(ctx context.Context, spec load.Spec) (*load.Result, error)
	// Token returns a JWT the pool's JWT filter accepts for issuer.
	Token(issuer string) (string, error)
	// Close releases the target.
	Close() error
}

// AdminTimeout bounds one admin request.
const AdminTimeout = stats.AdminTimeout

// Disruption is something that happened to the pool on its own account, not the scenario's:
// a pod killed or restarted, a worker stuck.
type Disruption struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	Pod    string    `json:"pod,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// Disrupted is implemented by targets that record disruptions (the local pool records every
// fault injected into it). The suite asks after each scenario, and a scenario that overlapped
// one is reported as disturbed, with what and when.
type Disrupted interface {
	Disruptions(since time.Time) []Disruption
}

// InterruptedUpError is a scenario switch (config set, then `pulumi up`) stopped by Ctrl-C. State says what the stack was left
// in, read back from the stack's state after the CLI stopped.
type InterruptedUpError struct {
	Scenario string
	State    string
	Err      error
}

func (e *InterruptedUpError) Error() string {
	return fmt.Sprintf("switching the stack to %s was interrupted: %s", e.Scenario, e.State)
}

func (e *InterruptedUpError) Unwrap() error { return e.Err }

// Sized is implemented by targets that size the gateway's pods per scenario (its pool's
// concurrency, cpu_limit and cpu_request): a change of the pod template, so the pods restart
// before the scenario's knobs are applied. A zero field is the target's own.
type Sized interface {
	Size(ctx context.Context, s stacks.Size) error
}

// Evented is implemented by targets whose pool a scenario can change during its window:
// scale it, restart it, push a config, kill a pod (stacks.Event). A target without it
// skips a scenario with events, saying so.
type Evented interface {
	// SetReplicas puts the pool in the state a scenario starts from, before its knobs are
	// applied: n gateway pods serving (0: the target's own count), earlier events' steps over.
	SetReplicas(ctx context.Context, n int) error
	// Slots is the most gateway pods the target can run at once.
	Slots() int
	// Event starts one event and returns; its steps (pods started, ready, terminating, gone)
	// go on in the background and are listed by Timeline.
	Event(ctx context.Context, ev stacks.Event, pool stacks.Pool) error
	// Timeline lists the steps of the scenario's own events since a time.
	Timeline(since time.Time) []Disruption
}

// Virtual is implemented by a target that runs in virtual time (the simulator): its pool stands
// still between calls, so the suite's waits (a settle, the wait for a quiet pool), its samples
// and a scenario's events happen on the target's clock, and a window takes the wall time its
// simulation takes.
type Virtual interface {
	// Now is the target's clock.
	Now() time.Time
	// Advance runs the pool d further with no client of the caller's.
	Advance(ctx context.Context, d time.Duration) error
	// LoadTimed runs a client as Load does, calling each hook at its times on the target's
	// clock while the window runs.
	LoadTimed(ctx context.Context, spec load.Spec, hooks []Hook) (*load.Result, error)
}

// Checker is a target that refuses, before anything runs, a scenario it cannot run (a client
// it has no model of, a pool or client too large for it), naming the field and its limit.
// sc is the scenario as the target runs it (Resolve).
type Checker interface {
	Check(sc stacks.Scenario) error
}

// Forker is a target that can open copies of itself, each an independent pool of the same
// configuration whose placements are seeded from i (a simulation: a copy costs nothing), so
// that the runs of a sweep go side by side on the machine's cores, each run's placement fixed
// by its place in the sweep whatever the number of cores.
type Forker interface {
	Fork(i int) (Target, error)
}

// Hook is something done on a virtual target's clock during a window: once at At from its
// start, or every Every (At 0). The pool stands still while F runs, so what F reads through
// the target (a pod's admin, the pod list) is the pool at that instant.
type Hook struct {
	At, Every time.Duration
	F         func(now time.Time)
}
