package stacks

import (
	"fmt"
	"math"
	"strings"
)

// Diagnosed is what `igwlab diagnose --save-scenario` read of a live pool, kept in the scenario
// it wrote: where the scenario's numbers came from, the evidence for the client it guessed, and
// what it could not read with the default it used instead. It is a record: nothing in it changes
// how the scenario runs, and predict compares a run against it.
type Diagnosed struct {
	// Source is where the stats were read (a Prometheus URL, admin endpoints, a namespace).
	Source string `yaml:"source"`
	// At is when the window ended (RFC 3339) and Window how long it was.
	At     string   `yaml:"at"`
	Window Duration `yaml:"window"`
	// Gateway is the product the stats' names point to (istio, envoy-gateway, ...; "" unknown).
	Gateway string `yaml:"gateway"`
	// Envoy is the release the pods' bootstrap reported.
	Envoy string `yaml:"envoy"`
	// Pods and the connections each was seen with, in the order read.
	Pods              int       `yaml:"pods"`
	ConnectionsPerPod []float64 `yaml:"connections_per_pod"`
	// Connections seen, their CV over the pods and the chance band's verdict for that many.
	Connections   float64 `yaml:"connections"`
	CVConnections float64 `yaml:"cv_connections"`
	CVRequests    float64 `yaml:"cv_requests"`
	Chance        string  `yaml:"chance"`
	// Verdict is diagnose's.
	Verdict string `yaml:"verdict"`
	// RPS is the requests a second the pool took; StreamsPerConnection the streams in flight
	// per open connection; StreamLifeS a stream's mean life (-1: none ended in the window).
	RPS                  float64 `yaml:"rps"`
	StreamsPerConnection float64 `yaml:"streams_per_connection"`
	StreamLifeS          float64 `yaml:"stream_life_s"`
	// ResponseBytes is the mean bytes sent per request.
	ResponseBytes float64 `yaml:"response_bytes"`
	// HotPod is the pod that carried the most.
	HotPod string `yaml:"hot_pod"`
	// Placement is how connections landed on pods: random (within or under chance) or
	// affinity (beyond chance: something in front of the gateway places them).
	Placement string `yaml:"placement"`
	// Client is the client kind guessed (a ClientKinds kind), Shape how it behaves at the
	// gateway (dials at the cap, queues at it, a ClientConn per connection, long-lived streams,
	// many short connections), and Evidence what in the stats points to it.
	Client   string   `yaml:"client"`
	Shape    string   `yaml:"shape"`
	Evidence []string `yaml:"evidence"`
	// Unread are the things it could not read, each with the default the scenario uses.
	Unread []Unread `yaml:"unread"`
}

// Unread is one thing diagnose could not read and what the scenario assumes instead.
type Unread struct {
	What    string `yaml:"what"`
	Default string `yaml:"default"`
}

// Placements are Diagnosed.Placement's values.
var Placements = []string{"random", "affinity"}

func checkDiagnosed(d *Diagnosed, bad func(field, msg string), oneOf func(field, v string, allowed []string)) {
	if d == nil {
		return
	}
	nonNeg := func(field string, v float64) {
		if !(v >= 0) || math.IsInf(v, 1) {
			bad("diagnosed."+field, fmt.Sprintf("%g is out of range (allowed 0 or more)", v))
		}
	}
	nonNeg("connections", d.Connections)
	nonNeg("cv_connections", d.CVConnections)
	nonNeg("cv_requests", d.CVRequests)
	nonNeg("rps", d.RPS)
	nonNeg("streams_per_connection", d.StreamsPerConnection)
	nonNeg("response_bytes", d.ResponseBytes)
	if !(d.StreamLifeS >= -1) {
		bad("diagnosed.stream_life_s", fmt.Sprintf("%g is out of range (allowed -1, none ended, or 0 or more)", d.StreamLifeS))
	}
	if d.Pods < 0 || d.Pods > MaxReplicas {
		bad("diagnosed.pods", fmt.Sprintf("%d is out of range (allowed 0..%d)", d.Pods, MaxReplicas))
	}
	if len(d.ConnectionsPerPod) > 0 && len(d.ConnectionsPerPod) != d.Pods {
		bad("diagnosed.connections_per_pod", fmt.Sprintf("%d values for %d pods: one per pod", len(d.ConnectionsPerPod), d.Pods))
	}
	for i, v := range d.ConnectionsPerPod {
		nonNeg(fmt.Sprintf("connections_per_pod[%d]", i), v)
	}
	if d.Placement != "" {
		oneOf("diagnosed.placement", d.Placement, Placements)
	}
	if d.Client != "" {
		if _, ok := LookupClient(d.Client); !ok {
			bad("diagnosed.client", fmt.Sprintf("%q is no client kind (allowed: %s)", d.Client, strings.Join(clientNames(func(ClientKind) bool { return true }), ", ")))
		}
	}
	for i, u := range d.Unread {
		if u.What == "" || u.Default == "" {
			bad(fmt.Sprintf("diagnosed.unread[%d]", i), "what and default are both required")
		}
	}
}
