// Package load drives the lab's clients against a target address: h2dial (a Go client that
// dials new connections at the stream cap), fortio as a library (one client per goroutine: a
// fixed pool that queues) and a gRPC client with one ClientConn (queues at the stream limit,
// as ghz --connections=1 does). Every driver reports the same Result, plus the client's own
// native output for the results folder.
package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/igwlab/igwlab/grpclab"
	"github.com/igwlab/igwlab/h2dial"
)

// Spec is one client run.
type Spec struct {
	Kind        string // h2dial, fortio, grpc
	Mode        string // h2dial: shared or distinct
	Concurrency int
	Connections int // grpc
	Target      string
	Path        string
	QPS         float64
	BodyBytes   int // h2dial: POST a body of this many bytes with every request
	Duration    time.Duration
	SlowPath    string
	SlowWorkers int
	Headers     map[string]string
	Authority   string
	AllowRemote bool
	// TLS speaks HTTP/2 over TLS (the local gateway's own certificate, not verified).
	TLS bool
	// Rate and MessageBytes are the messages a second on each stream, and their payload, in
	// the gRPC client's stream modes (Mode server-stream or bidi).
	Rate         float64
	MessageBytes int
	// LB is the gRPC client's policy (pick_first, round_robin); Addresses are what
	// round_robin balances over: the gateway pods' own addresses, which the target fills in,
	// as a headless Service's DNS name returns them (in a cluster, Target is that name).
	LB        string
	Addresses []string
	// Names resolves round_robin's name again when the client asks, where the target emulates
	// the headless Service's DNS (the local target); nil keeps Addresses for the run.
	Names *grpclab.Names `json:"-"`
	// LongStream makes each h2dial request a long-lived stream, read as it arrives.
	LongStream bool
	// ClientPods runs the client in that many mesh client pods at once (an east-west
	// scenario), each with its own Target (Targets); 0: one client against Target.
	ClientPods int
	Targets    []string
}

func (s Spec) scheme() string {
	if s.TLS {
		return "https://"
	}
	return "http://"
}

// Result is what a client saw.
type Result struct {
	Client            string             `json:"client"`
	Requests          int64              `json:"requests"`
	Errors            int64              `json:"errors"`
	RPS               float64            `json:"rps"`
	Latency           h2dial.Latency     `json:"latency"`
	ConnectionsOpened int                `json:"connections_opened"`
	PerConnection     []int64            `json:"requests_per_connection"`
	Slow              *h2dial.SlowResult `json:"slow,omitempty"`
	ErrorKinds        map[string]int64   `json:"error_kinds,omitempty"`
	// Open loop (a client given a rate): the rate asked for, requests due but never sent, and
	// the 99th percentile of how late requests went out after they were due (ms).
	OfferedRPS float64 `json:"offered_rps,omitempty"`
	Unsent     int64   `json:"unsent,omitempty"`
	SendLagP99 float64 `json:"send_lag_p99_ms,omitempty"`
	// Long-lived streams: the streams opened, how those that ended before the window did
	// ended, and each connection the client opened with the streams it carried.
	StreamsOpened int64            `json:"streams_opened,omitempty"`
	StreamEnds    map[string]int64 `json:"stream_ends,omitempty"`
	Conns         []h2dial.ConnUse `json:"connections_used,omitempty"`

	// Native is the client's own result, written as <client>.json; Text its own summary.
	Native any    `json:"-"`
	Text   string `json:"-"`
}

// Run drives the client the spec names.
func Run(ctx context.Context, s Spec) (*Result, error) {
	if s.Duration <= 0 {
		return nil, errors.New("load: duration must be positive")
	}
	if !s.AllowRemote && len(s.Targets) == 0 {
		if err := checkLoopback(s.Target); err != nil {
			return nil, err
		}
	}
	c, err := Lookup(s.Kind)
	if err != nil {
		return nil, err
	}
	if len(s.Targets) > 0 {
		return runPods(ctx, c, s)
	}
	return c.Run(ctx, s)
}

// checkLoopback refuses targets outside 127.0.0.0/8: load only goes where the user allowed it.
func checkLoopback(target string) error {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("load: target %q: want host:port", target)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("load: refusing to send load to %s: only loopback (127.0.0.0/8) targets are allowed here", target)
}
