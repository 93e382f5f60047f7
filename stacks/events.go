package stacks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Pool is the gateway Deployment a scenario starts from and how its pods come and go, for
// scenarios whose pool changes under load (events). Unset fields take the defaults of the
// lab's Istio, each cited where it is read.
type Pool struct {
	// Replicas is the number of gateway pods the window starts with; 0 means the target's
	// own (6 in the lab).
	Replicas int `yaml:"replicas"`
	// ReadyDelay is how long a new pod takes from its start to its first passing readiness
	// probe, when the Service starts sending it connections. Istio's gateway injection
	// template probes /healthz/ready every global.proxy.readinessPeriodSeconds (15) from
	// readinessInitialDelaySeconds (0) (manifests/charts/istio-control/istio-discovery/
	// files/gateway-injection-template.yaml, values.yaml), so a pod whose first probe comes
	// before Envoy has its config turns ready one period later: 15s.
	ReadyDelay Duration `yaml:"ready_delay"`
	// TerminationDrain is the proxy's terminationDrainDuration: on SIGTERM pilot-agent posts
	// drain_listeners?graceful (pkg/envoy/agent.go terminate, pkg/envoy/admin.go
	// DrainListeners), waits this long, then kills Envoy; Istio's default is 5s
	// (pkg/config/mesh/mesh.go DefaultProxyConfig).
	TerminationDrain Duration `yaml:"termination_drain"`
	// HPASync is the Horizontal Pod Autoscaler's sync period the window is read against
	// (kube-controller-manager --horizontal-pod-autoscaler-sync-period, 15s): the HPA-blind
	// call needs the blind spell to last two of them.
	HPASync Duration `yaml:"hpa_sync_period"`
	// Concurrency, CPULimit and CPURequest size the gateway pods for the window (Size): a
	// pod template change, so the pods restart. Zero keeps the target's own.
	Concurrency int `yaml:"concurrency"`
	CPULimit    CPU `yaml:"cpu_limit"`
	CPURequest  CPU `yaml:"cpu_request"`
	// ServiceTime is local.service_time, set by WithLocal: no scenario file writes it here.
	ServiceTime Duration `yaml:"-"`
}

// Size is the pool's workers and CPU.
func (p Pool) Size() Size {
	return Size{Concurrency: p.Concurrency, CPULimit: p.CPULimit, CPURequest: p.CPURequest, ServiceTime: p.ServiceTime}
}

// Size is the gateway pods' Envoy workers and container CPU.
type Size struct {
	// Concurrency is Envoy's worker threads per pod (proxy.istio.io/config concurrency).
	Concurrency int `yaml:"concurrency"`
	// CPULimit and CPURequest are the gateway container's resources.limits.cpu and
	// resources.requests.cpu: the limit is its CFS quota, the request what the HPA's
	// utilisation is read against.
	CPULimit   CPU `yaml:"cpu_limit"`
	CPURequest CPU `yaml:"cpu_request"`
	// ServiceTime is the emulated gateway's work per request (the local target only: a real
	// gateway's cost is its own).
	ServiceTime Duration `yaml:"-"`
}

// IsZero reports whether the size keeps the target's own on every field.
func (s Size) IsZero() bool { return s == Size{} }

// Over returns s with o's set fields in place of its own.
func (s Size) Over(o Size) Size {
	overlay(&s.Concurrency, o.Concurrency)
	if o.CPULimit > 0 {
		s.CPULimit = o.CPULimit
	}
	if o.CPURequest > 0 {
		s.CPURequest = o.CPURequest
	}
	overlay(&s.ServiceTime, o.ServiceTime)
	return s
}

// String renders the size for progress lines and reports ("8 workers, CPU limit 2").
func (s Size) String() string {
	var parts []string
	if s.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("%d worker(s)", s.Concurrency))
	}
	if s.CPULimit > 0 {
		parts = append(parts, "CPU limit "+s.CPULimit.String())
	}
	if s.CPURequest > 0 {
		parts = append(parts, "CPU request "+s.CPURequest.String())
	}
	if s.ServiceTime > 0 {
		parts = append(parts, fmt.Sprintf("%s per request", s.ServiceTime.D()))
	}
	if len(parts) == 0 {
		return "the target's own workers and CPU"
	}
	return strings.Join(parts, ", ")
}

// MaxConcurrency bounds pool.concurrency: the lab's, and Envoy's sensible, most workers per pod.
const MaxConcurrency = 64

// The pool's defaults, from Istio's source (see Pool).
const (
	DefaultReadyDelay       = Duration(15 * time.Second)
	DefaultTerminationDrain = Duration(5 * time.Second)
	DefaultHPASync          = Duration(15 * time.Second)
)

// WithDefaults fills the pool's unset timings with Istio's defaults.
func (p Pool) WithDefaults() Pool {
	d := Pool{ReadyDelay: DefaultReadyDelay, TerminationDrain: DefaultTerminationDrain, HPASync: DefaultHPASync}
	overlay(&d.Replicas, p.Replicas)
	overlay(&d.ReadyDelay, p.ReadyDelay)
	overlay(&d.TerminationDrain, p.TerminationDrain)
	overlay(&d.HPASync, p.HPASync)
	d.Concurrency, d.CPULimit, d.CPURequest, d.ServiceTime = p.Concurrency, p.CPULimit, p.CPURequest, p.ServiceTime
	return d
}

// Event is one change to the gateway pool during a scenario's window. Exactly one of Scale,
// Restart, Push and Kill is set.
type Event struct {
	// At is when the event starts, from the window's start.
	At Duration `yaml:"at"`
	// Scale sets the Deployment's replicas: new pods start and turn ready after the pool's
	// ready delay; removed pods (the newest first, as the ReplicaSet controller picks) run
	// the termination sequence.
	Scale int `yaml:"scale,omitempty"`
	// Restart is a rolling restart (kubectl rollout restart: a new pod template).
	Restart *Restart `yaml:"restart,omitempty"`
	// Push is a config push that changes the gateway's listener (an EnvoyFilter update):
	// every connection of the changed filter chains drains.
	Push bool `yaml:"push,omitempty"`
	// Kill kills the container of the gateway pod with this index (0 is the first): its
	// connections are reset and the kubelet restarts it.
	Kill *int `yaml:"kill,omitempty"`
}

// Restart is a Deployment's RollingUpdate strategy. Values are a count ("1") or a percentage
// of the replicas ("25%"), as in the Deployment API; unset means Kubernetes' 25% each.
type Restart struct {
	MaxSurge       string `yaml:"max_surge,omitempty"`
	MaxUnavailable string `yaml:"max_unavailable,omitempty"`
}

// Kind names what the event does.
func (e Event) Kind() string {
	switch {
	case e.Scale > 0:
		return "scale"
	case e.Restart != nil:
		return "restart"
	case e.Push:
		return "push"
	case e.Kill != nil:
		return "kill"
	}
	return ""
}

// String renders the event for progress lines and reports.
func (e Event) String() string {
	switch e.Kind() {
	case "scale":
		return fmt.Sprintf("at %s scale to %d pods", e.At, e.Scale)
	case "restart":
		return fmt.Sprintf("at %s rolling restart (%s)", e.At, e.Restart.Strategy())
	case "push":
		return fmt.Sprintf("at %s config push (listener update)", e.At)
	case "kill":
		return fmt.Sprintf("at %s kill pod %d", e.At, *e.Kill)
	}
	return "at " + e.At.String() + " nothing"
}

// Strategy renders the rolling update's values, Kubernetes' defaults where unset.
func (r Restart) Strategy() string {
	return fmt.Sprintf("maxSurge %s, maxUnavailable %s", orDefault(r.MaxSurge), orDefault(r.MaxUnavailable))
}

func orDefault(v string) string {
	if v == "" {
		return DefaultRollingPercent
	}
	return v
}

// DefaultRollingPercent is a Deployment's default maxSurge and maxUnavailable
// (k8s.io/api apps/v1 types.go, RollingUpdateDeployment).
const DefaultRollingPercent = "25%"

// Fenceposts resolves a rolling update's maxSurge and maxUnavailable for a replica count as
// the Deployment controller does (pkg/controller/deployment/util ResolveFenceposts):
// percentages of the replicas, surge rounded up and unavailable down; both zero makes
// unavailable 1, so that the rollout can progress.
func (r Restart) Fenceposts(replicas int) (surge, unavailable int, err error) {
	if surge, err = scaledValue(orDefault(r.MaxSurge), replicas, true); err != nil {
		return 0, 0, fmt.Errorf("max_surge: %w", err)
	}
	if unavailable, err = scaledValue(orDefault(r.MaxUnavailable), replicas, false); err != nil {
		return 0, 0, fmt.Errorf("max_unavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable, nil
}

// CheckRollingValue checks a maxSurge or maxUnavailable value: a count or a percentage.
func CheckRollingValue(v string) error {
	_, err := scaledValue(v, 1, false)
	return err
}

func scaledValue(v string, total int, roundUp bool) (int, error) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("%q: want a count 0..1000 or a percentage 0%%..100%%", v)
		}
		f := float64(p) * float64(total) / 100
		if roundUp {
			return int(math.Ceil(f)), nil
		}
		return int(math.Floor(f)), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1000 {
		return 0, fmt.Errorf("%q: want a count 0..1000 or a percentage 0%%..100%%", v)
	}
	return n, nil
}

// MaxReplicas is the most gateway pods a scenario's pool and events may ask for: the simulated
// target's limit. A target that holds fewer refuses more before it runs anything (the local
// target's emulated pool holds 64).
const MaxReplicas = 1000

// Slots is how many pod slots the scenario's pool needs at most: the replicas it starts with
// or scales to, plus the surge and new pods a rolling restart brings up.
func (s *Scenario) Slots(targetPods int) int {
	cur := s.Pool.Replicas
	if cur == 0 {
		cur = targetPods
	}
	need := cur
	for _, e := range s.Events {
		switch e.Kind() {
		case "scale":
			cur = e.Scale
		case "restart":
			// Every pod is replaced by a new one: the new ones need slots of their own while
			// the old ones drain.
			need = max(need, 2*cur)
		}
		need = max(need, cur)
	}
	return need
}

// checkEvents validates the pool and the events of a scenario (lab and local).
func checkEvents(s *Scenario, bad func(field, msg string)) {
	for _, p := range []struct {
		prefix string
		pool   Pool
		events []Event
	}{{"", s.Pool, s.Events}, {"local.", s.Local.Pool, s.Local.Events}} {
		if p.pool.Replicas < 0 || p.pool.Replicas > MaxReplicas {
			bad(p.prefix+"pool.replicas", fmt.Sprintf("%d is out of range (allowed 0..%d; 0 keeps the target's)", p.pool.Replicas, MaxReplicas))
		}
		if c := p.pool.Concurrency; c < 0 || c > MaxConcurrency {
			bad(p.prefix+"pool.concurrency", fmt.Sprintf("%d is out of range (allowed 0..%d Envoy workers per pod; 0 keeps the target's)", c, MaxConcurrency))
		}
		for _, c := range []struct {
			field string
			v     CPU
		}{{"pool.cpu_limit", p.pool.CPULimit}, {"pool.cpu_request", p.pool.CPURequest}} {
			if err := c.v.Check(); err != nil {
				bad(p.prefix+c.field, err.Error()+"; 0 or unset keeps the target's")
			}
		}
		if l, r := p.pool.CPULimit, p.pool.CPURequest; l > 0 && r > l {
			bad(p.prefix+"pool.cpu_request", fmt.Sprintf("%s is above pool.cpu_limit %s: Kubernetes refuses a request over its limit", r, l))
		}
		for _, d := range []struct {
			field string
			v     Duration
		}{{"pool.ready_delay", p.pool.ReadyDelay}, {"pool.termination_drain", p.pool.TerminationDrain}, {"pool.hpa_sync_period", p.pool.HPASync}} {
			if d.v < 0 || d.v.D() > 10*time.Minute {
				bad(p.prefix+d.field, fmt.Sprintf("%s is out of range (allowed 0s..600s; 0 keeps the default)", d.v))
			}
		}
		var last Duration
		for i, e := range p.events {
			field := fmt.Sprintf("%sevents[%d]", p.prefix, i)
			set := 0
			for _, on := range []bool{e.Scale != 0, e.Restart != nil, e.Push, e.Kill != nil} {
				if on {
					set++
				}
			}
			if set != 1 {
				bad(field, fmt.Sprintf("sets %d of scale, restart, push, kill; an event does exactly one", set))
			}
			if e.At < 0 || e.At.D() > 24*time.Hour {
				bad(field+".at", fmt.Sprintf("%s is out of range (allowed 0s..24h, from the window's start)", e.At))
			} else if e.At < last {
				bad(field+".at", fmt.Sprintf("%s comes before the event above it (%s): list events in time order", e.At, last))
			}
			last = max(last, e.At)
			if e.Scale < 0 || e.Scale > MaxReplicas {
				bad(field+".scale", fmt.Sprintf("%d is out of range (allowed 1..%d)", e.Scale, MaxReplicas))
			}
			if e.Kill != nil && (*e.Kill < 0 || *e.Kill >= MaxReplicas) {
				bad(field+".kill", fmt.Sprintf("%d is out of range (allowed 0..%d, a pod's index)", *e.Kill, MaxReplicas-1))
			}
			if r := e.Restart; r != nil {
				if _, err := scaledValue(orDefault(r.MaxSurge), 1, true); err != nil {
					bad(field+".restart.max_surge", err.Error())
				}
				if _, err := scaledValue(orDefault(r.MaxUnavailable), 1, false); err != nil {
					bad(field+".restart.max_unavailable", err.Error())
				}
			}
		}
		if len(p.events) > 0 && s.Load.Duration > 0 && p.prefix == "" && last.D() >= s.Load.Duration.D() {
			bad(p.prefix+fmt.Sprintf("events[%d].at", len(p.events)-1), fmt.Sprintf("%s is not inside the window (load.duration %s)", last, s.Load.Duration))
		}
		if p.prefix == "local." && len(p.events) > 0 && s.Local.Load.Duration > 0 && last.D() >= s.Local.Load.Duration.D() {
			bad(fmt.Sprintf("local.events[%d].at", len(p.events)-1), fmt.Sprintf("%s is not inside the window (local.load.duration %s)", last, s.Local.Load.Duration))
		}
	}
}

// poolDepartures lists where the local pool and events depart from the lab's.
func (s *Scenario) poolDepartures() []Departure {
	var out []Departure
	lab := s.Pool.WithDefaults()
	if v := s.Local.Pool.Replicas; v > 0 {
		out = append(out, Departure{Field: "pool.replicas", Lab: strconv.Itoa(s.Pool.Replicas), Local: strconv.Itoa(v)})
	}
	if v := s.Local.Pool.ReadyDelay; v > 0 {
		out = append(out, Departure{Field: "pool.ready_delay", Lab: lab.ReadyDelay.String(), Local: v.String()})
	}
	if v := s.Local.Pool.TerminationDrain; v > 0 {
		out = append(out, Departure{Field: "pool.termination_drain", Lab: lab.TerminationDrain.String(), Local: v.String()})
	}
	if v := s.Local.Pool.Concurrency; v > 0 {
		out = append(out, Departure{Field: "pool.concurrency", Lab: strconv.Itoa(s.Pool.Concurrency), Local: strconv.Itoa(v)})
	}
	if v := s.Local.Pool.CPULimit; v > 0 {
		out = append(out, Departure{Field: "pool.cpu_limit", Lab: s.Pool.CPULimit.String(), Local: v.String()})
	}
	if v := s.Local.Pool.CPURequest; v > 0 {
		out = append(out, Departure{Field: "pool.cpu_request", Lab: s.Pool.CPURequest.String(), Local: v.String()})
	}
	if v := s.Local.ServiceTime; v > 0 {
		out = append(out, Departure{Field: "service_time", Lab: "the gateway's own", Local: v.D().String() + " per request"})
	}
	if len(s.Local.Events) > 0 {
		out = append(out, Departure{Field: "events", Lab: EventsText(s.Events), Local: EventsText(s.Local.Events)})
	}
	return out
}

// EventsText renders events on one line.
func EventsText(evs []Event) string {
	if len(evs) == 0 {
		return "none"
	}
	parts := make([]string, len(evs))
	for i, e := range evs {
		parts[i] = e.String()
	}
	return strings.Join(parts, "; ")
}
