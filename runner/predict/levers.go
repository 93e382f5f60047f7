// Package predict runs a scenario as it is and under each lever that applies to it (the
// gateway's knobs, the pool's size, the client's own connections), side by side on one target,
// and ranks them by what the clients feel and what the pool pays: which lever to apply, at which
// value, and what to expect to see afterwards.
package predict

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// Kinds of lever.
const (
	KindNone   = "none"   // the scenario as it is
	KindServer = "server" // a gateway knob (an EnvoyFilter, a policy)
	KindPool   = "pool"   // the gateway Deployment (pods, workers)
	KindClient = "client" // the client's own connections
)

// Lever is one change to try: the scenario under it, and what it is.
type Lever struct {
	// Label names it in folders and tables ("as-is", "max_requests_per_connection=300").
	Label string `json:"label"`
	Kind  string `json:"kind"`
	// Knob and Value are the gateway knob it sets (server levers).
	Knob  string `json:"knob,omitempty"`
	Value string `json:"value,omitempty"`
	// What says it in a sentence, with where its value comes from.
	What string           `json:"what"`
	sc   *stacks.Scenario `json:"-"`
}

// Shape is what the levers are sized from: the pool and the traffic as the target runs them.
type Shape struct {
	Pods, Workers int
	CPULimit      stacks.CPU
	Window        time.Duration
	// RPS is the scenario's rate (its qps, else the diagnosed rate), Connections the client's
	// connections as its kind opens them under the knobs in force, Streams its streams.
	RPS         float64
	Connections int
	Streams     int
}

// ShapeOf sizes a scenario (lab, as the catalog has it) on a target whose resolved scenario is
// eff and whose pool is pods x workers.
func ShapeOf(eff stacks.Scenario, pods, workers int) Shape {
	s := Shape{Pods: max(1, pods), Workers: max(1, workers), CPULimit: eff.Pool.CPULimit, Window: eff.Load.Duration.D(),
		RPS: eff.Client.QPS, Streams: max(1, eff.Client.Concurrency)}
	if s.RPS == 0 && eff.Diagnosed != nil {
		s.RPS = eff.Diagnosed.RPS
	}
	c := eff.Client
	switch {
	case c.Kind == "grpc" && c.LB == "round_robin":
		s.Connections = max(1, c.Connections) * s.Pods
	case c.Kind == "grpc":
		s.Connections = max(1, c.Connections)
	case c.DialsAtCap():
		s.Connections = 1
		if v, ok := knobNumber(eff.Knobs, knobStreams); ok && v > 0 {
			s.Connections = int(math.Ceil(float64(s.Streams) / v))
		}
	default:
		s.Connections = s.Streams
	}
	return s
}

const (
	knobStreams     = "hcm.http2_protocol_options.max_concurrent_streams"
	knobMaxRequests = "hcm.common_http_protocol_options.max_requests_per_connection"
	knobMaxDuration = "hcm.common_http_protocol_options.max_connection_duration"
	knobStreamLife  = "hcm.common_http_protocol_options.max_stream_duration"
	knobExact       = "listener.connection_balance_config.exact_balance"
	// clientPool is how many connections the client-pool lever gives a gRPC client for each it
	// has: a channel pool of four, a common size (grpc-go's own examples use a handful).
	clientPool = 4
)

// Levers are the scenario as it is and each lever that applies to it on a pool of shape s, the
// scenario as it is first. Values are sized from the shape: rotation so that each connection
// is re-placed eight and two times a window; a stream cap that leaves a client that dials
// about two connections per worker; duration limits a quarter of the window.
func Levers(lab *stacks.Scenario, s Shape) []Lever {
	out := []Lever{{Label: "as-is", Kind: KindNone, What: "the scenario as it is", sc: lab}}
	knob := func(path, value, what string) {
		var k stacks.Knobs
		spec, ok := stacks.Lookup(path)
		if !ok || spec.Set(&k, value) != nil {
			return
		}
		out = append(out, Lever{Label: folderKnob(path) + "=" + value, Kind: KindServer, Knob: path, Value: value, What: what, sc: renamed(lab.WithKnobs(k), folderKnob(path)+"-"+value)})
	}
	multiplexed := s.Streams >= 2*s.Connections
	if multiplexed {
		cap := max(1, int(math.Ceil(float64(s.Streams)/float64(2*s.Pods*s.Workers))))
		knob(knobStreams, strconv.Itoa(cap), fmt.Sprintf("a stream cap of %d: a client that dials at the cap opens about two connections per worker for its %d streams; one that queues at it waits", cap, s.Streams))
	}
	perConn := s.RPS / float64(max(1, s.Connections))
	for _, every := range []time.Duration{s.Window / 8, s.Window / 2} {
		if perConn <= 0 || every <= 0 {
			break
		}
		v := max(10, int(math.Round(perConn*every.Seconds())))
		knob(knobMaxRequests, strconv.Itoa(v), fmt.Sprintf("count rotation: each connection drained after %d requests, about every %s at %.0f requests a second per connection", v, every.Round(time.Millisecond), perConn))
	}
	if d := (s.Window / 4).Round(time.Second); d >= time.Second {
		knob(knobMaxDuration, stacks.Duration(d).String(), fmt.Sprintf("duration rotation: each connection drained after %s, a quarter of the window", d))
		if lab.Client.LongLived() {
			knob(knobStreamLife, stacks.Duration(d).String(), fmt.Sprintf("each long-lived stream ended after %s, so its successor can move", d))
		}
	}
	if s.Workers > 1 && !exactOn(lab.Knobs) {
		knob(knobExact, "{}", fmt.Sprintf("exact_balance: each new connection to the least-loaded of a pod's %d workers (it moves nothing between pods)", s.Workers))
	}
	// More pods, where the scenario does not change the pool itself (a scale-out scenario is
	// about the pods it adds during the window).
	if n := min(stacks.MaxReplicas, 2*s.Pods); n > s.Pods && len(lab.Events) == 0 {
		sc := renamed(lab, "pods-"+strconv.Itoa(n))
		sc.Pool.Replicas = n
		if sc.Local.Pool.Replicas > 0 {
			sc.Local.Pool.Replicas = min(stacks.MaxReplicas, 2*sc.Local.Pool.Replicas)
		}
		out = append(out, Lever{Label: "pods=" + strconv.Itoa(n), Kind: KindPool, What: fmt.Sprintf("twice the pods: %d in place of %d", n, s.Pods), sc: sc})
	}
	if lim := s.CPULimit.Cores(); lim > 0 && float64(s.Workers) > math.Ceil(lim) {
		w := int(math.Ceil(lim))
		sc := renamed(lab, "workers-"+strconv.Itoa(w))
		sc.Pool.Concurrency = w
		sc.Local.Pool.Concurrency = 0
		out = append(out, Lever{Label: "workers=" + strconv.Itoa(w), Kind: KindPool, What: fmt.Sprintf("%d workers per pod, as many as the CPU limit's %s cores: more workers than the quota lets run only take turns", w, s.CPULimit), sc: sc})
	}
	if lab.Client.Kind == "grpc" && lab.Client.LB != "round_robin" {
		sc := renamed(lab, "client-pool")
		sc.Client.Connections = min(1000, clientPool*max(1, lab.Client.Connections))
		if sc.Local.Client.Connections > 0 {
			sc.Local.Client.Connections = min(1000, clientPool*sc.Local.Client.Connections)
		}
		out = append(out, Lever{Label: "client-pool=" + strconv.Itoa(sc.Client.Connections), Kind: KindClient,
			What: fmt.Sprintf("a pool of %d gRPC channels in place of %d, calls spread over them", sc.Client.Connections, max(1, lab.Client.Connections)), sc: sc})
		rr := renamed(lab, "round-robin")
		rr.Client.LB = "round_robin"
		out = append(out, Lever{Label: "round-robin", Kind: KindClient, What: "gRPC round_robin over the gateway pods' addresses (a headless Service): a connection to every pod", sc: rr})
	}
	return out
}

// renamed is a copy of sc under the lever's name, so its results folder says which it is.
func renamed(sc *stacks.Scenario, lever string) *stacks.Scenario {
	out := sc.Lab()
	out.Name = sc.Name + "+" + lever
	return &out
}

func folderKnob(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[i+1:]
		}
	}
	return path
}

// knobNumber reads a knob in force as a number (seconds for a duration).
func knobNumber(k stacks.Knobs, path string) (float64, bool) {
	for _, v := range k.Effective() {
		if v.Path == path {
			if d, err := stacks.ParseDuration(v.Value); err == nil && !isInt(v.Value) {
				return d.D().Seconds(), true
			}
			f, err := strconv.ParseFloat(v.Value, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// exactOn says whether the scenario already balances a pod's connections exactly.
func exactOn(k stacks.Knobs) bool {
	for _, v := range k.Set() {
		if v.Path == knobExact {
			return true
		}
	}
	return false
}

func isInt(s string) bool { _, err := strconv.Atoi(s); return err == nil }
