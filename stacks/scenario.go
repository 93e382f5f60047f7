// Package stacks is the scenario catalog: one YAML file per scenario, the single source of
// truth for the knobs a scenario sets on the gateway, the client that drives it, the load, the
// waypoint toggle, its prerequisites and what it teaches. The local emulator, the Pulumi
// program and the runner all read scenarios through this package; nothing else holds a copy of
// a knob value.
package stacks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Scenario is one scenario file, validated.
type Scenario struct {
	// Name is the scenario's identifier; it must equal the file name without ".yaml".
	Name string `yaml:"name"`
	// Order places the scenario in a suite run (ascending); ties break by name.
	Order int `yaml:"order"`
	// Title is a short human label.
	Title string `yaml:"title"`
	// Hypothesis names the hypothesis or check the scenario feeds (H-A .. H-E, S11, WAYPOINT, S12).
	Hypothesis string `yaml:"hypothesis"`
	// Feeds are the calls of the evaluation this scenario's run feeds, each in a role the
	// call's check names (control, capped, rotated...): the checks and the plots ask for roles,
	// never for scenario names.
	Feeds []Feed `yaml:"feeds"`
	// Teaches says, in a sentence or two, what the scenario shows.
	Teaches string `yaml:"teaches"`
	// Watch says which numbers show the effect.
	Watch string `yaml:"watch"`
	// Client is the load generator and how it is driven.
	Client Client `yaml:"client"`
	// Load is the timing of a run on the real lab.
	Load Timing `yaml:"load"`
	// Knobs are the gateway settings, with Envoy's names; unset means Envoy's default.
	Knobs Knobs `yaml:"knobs"`
	// Filters are the extra HTTP filters the scenario layers on the gateway.
	Filters Filters `yaml:"filters"`
	// Waypoint routes the gateway's traffic through an ambient waypoint pool.
	Waypoint bool `yaml:"waypoint"`
	// EastWest makes the scenario mesh traffic through the waypoint, not ingress (eastwest.go).
	EastWest *EastWest `yaml:"east_west"`
	// Requires lists prerequisites; a scenario whose prerequisites fail is skipped, not failed.
	Requires Requires `yaml:"requires"`
	// Optional keeps the scenario (and its control) out of a default run: it runs when --only
	// names it. It is for scenarios that show something only under a setting the default run
	// does not have (a round trip, say), so a default run stays what it was.
	Optional bool `yaml:"optional"`
	// Control names a scenario that must run right before this one, with the same load, as its
	// control (13-conn-balance runs 13-conn-balance-control first).
	Control string `yaml:"control"`
	// Pool is the gateway Deployment the window starts from, for scenarios with events.
	Pool Pool `yaml:"pool"`
	// Events change the pool during the window: scale, rolling restart, config push, kill.
	Events []Event `yaml:"events"`
	// Local holds the values that differ on the local target, each with its reason.
	Local Local `yaml:"local"`
	// Diagnosed is what diagnose read of the live pool this scenario was saved from (nil for a
	// scenario written by hand): a record, not a setting.
	Diagnosed *Diagnosed `yaml:"diagnosed"`
	// Case is the public report a worked example reproduces (stacks/cases).
	Case *Case `yaml:"case"`

	// File is where the scenario was loaded from (set by the loader).
	File string `yaml:"-"`
	// layer is the scenario's place in a merged catalog: 0 built-in, higher for each catalog
	// merged over it (Catalog.Merge); a higher layer takes a role a lower one feeds.
	layer int
	// Override holds knobs a command set on top of the catalog's (a sweep's value, capacity's
	// --knob), already in Knobs; a target switched through the stack config writes them as
	// igwlab:knobs. Never read from a file.
	Override Knobs `yaml:"-" json:"-"`
}

// Feed is one call a scenario feeds, and its role in it.
type Feed struct {
	Call string `yaml:"call"`
	Role string `yaml:"role"`
}

// Client describes the load generator of a scenario.
type Client struct {
	// Kind is one of ClientKinds: h2dial (dials new connections at the stream cap), fortio (a
	// fixed pool that queues) or grpc (one ClientConn, as ghz --connections=1).
	Kind string `yaml:"kind"`
	// Mode is h2dial's transport layout, shared (one http2.Transport) or distinct (one per
	// worker), or the gRPC client's calls: unary (the default), server-stream or bidi.
	Mode string `yaml:"mode"`
	// Concurrency is h2dial's workers, fortio's -c, or the gRPC client's concurrent calls.
	Concurrency int `yaml:"concurrency"`
	// Connections is the gRPC client's number of connections (ghz --connections).
	Connections int `yaml:"connections"`
	// Path is the request path on the backend (go-httpbin).
	Path string `yaml:"path"`
	// QPS is the target request rate; 0 means as fast as the client goes (closed loop).
	QPS float64 `yaml:"qps"`
	// BodyBytes makes every request a POST uploading that many bytes (0: GET), so that the
	// gateway's receive windows govern the request body.
	BodyBytes int `yaml:"body_bytes"`
	// Slow adds slow workers on the same transport (head-of-line blocking, scenario 09).
	Slow *Slow `yaml:"slow"`
	// Headers are sent with every request; "${JWT}" is replaced with a token signed by the
	// lab's locally generated key.
	Headers map[string]string `yaml:"headers"`
	// Authority overrides the :authority of gRPC calls (the route to the gRPC backend).
	Authority string `yaml:"authority"`
	// MessageRate and MessageBytes are the messages a second each stream carries, and their
	// payload, in the gRPC client's stream modes (server-stream, bidi).
	MessageRate  float64 `yaml:"message_rate"`
	MessageBytes int     `yaml:"message_bytes"`
	// LB is the gRPC client's load-balancing policy: pick_first (one connection per
	// ClientConn, grpc-go's default) or round_robin over the gateway pods' addresses (a
	// headless Service: one connection per pod).
	LB string `yaml:"lb"`
	// LongStream makes each h2dial request a long-lived stream (an event stream on client.path
	// such as /sse), read as it arrives and opened again when it ends.
	LongStream bool `yaml:"long_stream"`
}

// Slow describes slow workers that share the fast workers' transport.
type Slow struct {
	Path    string `yaml:"path"`
	Workers int    `yaml:"workers"`
}

// Timing is the timing of a scenario run.
type Timing struct {
	// Duration is the measured window.
	Duration Duration `yaml:"duration"`
	// Warmup is a separate, unmeasured client run before the measured one.
	Warmup Duration `yaml:"warmup"`
	// Settle is the wait after applying knobs, before the warm-up.
	Settle Duration `yaml:"settle"`
	// SampleEvery is how often the window's stats are read for its time series; 0 is once a
	// second (a short window: eight times in it; a window with events: every 250ms). Reading
	// every pod costs the gateway, so only scenarios that look at sub-second bursts set it.
	SampleEvery Duration `yaml:"sample_every"`
}

// Filters are the HTTP filters a scenario adds to the gateway's chain.
type Filters struct {
	AccessLog *AccessLog `yaml:"access_log"`
	JWT       *JWT       `yaml:"jwt"`
}

// AccessLog is a JSON access log written only for requests whose response flags match.
type AccessLog struct {
	ResponseFlags []string `yaml:"response_flags"`
}

// JWT is request authentication with a locally generated signing key.
type JWT struct {
	// Mode is permissive (a missing token passes, a bad one is rejected: a
	// RequestAuthentication without an AuthorizationPolicy) or strict (a token is required).
	Mode   string `yaml:"mode"`
	Issuer string `yaml:"issuer"`
}

// Requires lists a scenario's prerequisites.
type Requires struct {
	// MinConcurrency is the fewest Envoy workers per gateway pod the scenario needs.
	MinConcurrency int `yaml:"min_concurrency"`
	// Targets, when set, are the only targets that can run the scenario (a production-size pool
	// runs on the simulated target alone). A command asked to run it elsewhere refuses before
	// it runs anything.
	Targets []string `yaml:"targets"`
}

// Targets are the names of the targets a scenario's requires.targets may list: the emulated
// pool on loopback, the simulated pool, and the real lab on k3d or an existing cluster.
var Targets = []string{"local", "sim", "k3d", "existing"}

// RunsOn says whether the scenario can run on target.
func (s *Scenario) RunsOn(target string) bool {
	return len(s.Requires.Targets) == 0 || slices.Contains(s.Requires.Targets, target)
}

// Local holds the local target's departures from the lab values. Every departure is shown
// next to the lab value in reports, never applied silently.
type Local struct {
	Load   Timing      `yaml:"load"`
	Knobs  Knobs       `yaml:"knobs"`
	Client LocalClient `yaml:"client"`
	// Pool's set fields replace the lab's (a shorter ready delay in a shorter window).
	Pool Pool `yaml:"pool"`
	// Events, when any, replace the lab's events (their times scaled to the local window).
	Events []Event `yaml:"events"`
	// ServiceTime is the emulated gateway's work per request in this scenario, in place of
	// the pool's (--service-time): a scenario that needs workers busy together at a rate
	// the harness can drive on two shared cores asks for heavier requests. The lab's Envoy
	// has its own cost; this has no lab value.
	ServiceTime Duration `yaml:"service_time"`
	// Why explains the departures; required when any knob or client value departs.
	Why string `yaml:"why"`
}

// LocalClient holds client values that differ on the local target.
type LocalClient struct {
	QPS         float64 `yaml:"qps"`
	Concurrency int     `yaml:"concurrency"`
	// Connections is the gRPC client's connections on the local target: a pool scaled down
	// to the local pods keeps the connections per pod, and so the chance of a spread.
	Connections int `yaml:"connections"`
}

// Duration is a time.Duration written the way Envoy's JSON writes durations ("10s", "0.5s")
// or as a Go duration ("1m30s").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String renders the duration as Envoy writes it in JSON: seconds with an "s" suffix. It is
// exact to the nanosecond (a float64 of seconds is not, past about 100 days), so that a value
// read, written and read again is the same value.
func (d Duration) String() string {
	ns, sign := uint64(d), ""
	if d < 0 {
		ns, sign = -uint64(d), "-" // two's complement: exact for the smallest Duration too
	}
	out := sign + strconv.FormatUint(ns/1e9, 10)
	if frac := ns % 1e9; frac != 0 {
		out += "." + strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
	}
	return out + "s"
}

// ParseDuration reads "10s", "0.5s", "250ms" or "1m30s".
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (write it as 10s, 0.5s or 250ms)", s)
	}
	return Duration(d), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalText renders the duration for JSON output.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses the duration from JSON input.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Lab returns the scenario with the lab's values: a copy that shares no knob with s.
func (s *Scenario) Lab() Scenario {
	out := *s
	out.Knobs = s.Knobs.Clone()
	return out
}

// WithLocal returns the scenario with its local departures applied on top of the lab values:
// what a target that takes them (the emulated pool) runs. Departures lists them.
func (s *Scenario) WithLocal() Scenario {
	out := s.Lab()
	overlay(&out.Load.Duration, s.Local.Load.Duration)
	overlay(&out.Load.Warmup, s.Local.Load.Warmup)
	overlay(&out.Load.Settle, s.Local.Load.Settle)
	overlay(&out.Client.QPS, s.Local.Client.QPS)
	overlay(&out.Client.Concurrency, s.Local.Client.Concurrency)
	overlay(&out.Client.Connections, s.Local.Client.Connections)
	out.Knobs = out.Knobs.Overlay(s.Local.Knobs)
	overlay(&out.Pool.Replicas, s.Local.Pool.Replicas)
	overlay(&out.Pool.ReadyDelay, s.Local.Pool.ReadyDelay)
	overlay(&out.Pool.TerminationDrain, s.Local.Pool.TerminationDrain)
	overlay(&out.Pool.HPASync, s.Local.Pool.HPASync)
	overlay(&out.Pool.Concurrency, s.Local.Pool.Concurrency)
	overlay(&out.Pool.CPULimit, s.Local.Pool.CPULimit)
	overlay(&out.Pool.CPURequest, s.Local.Pool.CPURequest)
	out.Pool.ServiceTime = s.Local.ServiceTime
	if len(s.Local.Events) > 0 {
		out.Events = s.Local.Events
	}
	return out
}

// overlay sets *dst to v when v is set (a local value departs only where it is given).
func overlay[T int | float64 | Duration | CPU](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// Departures lists, knob by knob, where the local target departs from the lab values.
func (s *Scenario) Departures() []Departure {
	var out []Departure
	for _, spec := range Registry {
		local, ok := spec.Get(&s.Local.Knobs)
		if !ok {
			continue
		}
		lab, labSet := spec.Get(&s.Knobs)
		labText := spec.Default + " (Envoy default)"
		if labSet {
			labText = lab
		}
		out = append(out, Departure{Field: "knobs." + spec.Path, Lab: labText, Local: local})
	}
	add := func(field string, lab, local string) {
		out = append(out, Departure{Field: field, Lab: lab, Local: local})
	}
	if s.Local.Load.Duration > 0 {
		add("load.duration", s.Load.Duration.String(), s.Local.Load.Duration.String())
	}
	if s.Local.Load.Warmup > 0 {
		add("load.warmup", s.Load.Warmup.String(), s.Local.Load.Warmup.String())
	}
	if s.Local.Load.Settle > 0 {
		add("load.settle", s.Load.Settle.String(), s.Local.Load.Settle.String())
	}
	if s.Local.Client.QPS > 0 {
		add("client.qps", strconv.FormatFloat(s.Client.QPS, 'f', -1, 64), strconv.FormatFloat(s.Local.Client.QPS, 'f', -1, 64))
	}
	if s.Local.Client.Concurrency > 0 {
		add("client.concurrency", strconv.Itoa(s.Client.Concurrency), strconv.Itoa(s.Local.Client.Concurrency))
	}
	if s.Local.Client.Connections > 0 {
		add("client.connections", strconv.Itoa(s.Client.Connections), strconv.Itoa(s.Local.Client.Connections))
	}
	return append(out, s.poolDepartures()...)
}

// Departure is one value that differs between the lab and the local target.
type Departure struct {
	Field string `json:"field"`
	Lab   string `json:"lab"`
	Local string `json:"local"`
}
