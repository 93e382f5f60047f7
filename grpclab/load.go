package grpclab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/igwlab/igwlab/h2dial"
)

// Modes of the client: what one of its Concurrency goroutines holds.
const (
	// Unary calls UnaryCall in a closed loop.
	Unary = "unary"
	// ServerStream holds one StreamingOutputCall open at a time, which the server answers
	// with a message every 1/Rate seconds: a watch, a subscription, a feed.
	ServerStream = "server-stream"
	// Bidi holds one FullDuplexCall open at a time and sends Rate messages a second on it,
	// each echoed by the server: a chat, a telemetry channel.
	Bidi = "bidi"
)

// Modes lists the client's modes.
var Modes = []string{Unary, ServerStream, Bidi}

// Load-balancing policies of each ClientConn (grpc-go's).
const (
	// PickFirst keeps one connection per ClientConn: grpc-go's default.
	PickFirst = "pick_first"
	// RoundRobin keeps one connection per address the ClientConn resolves and sends each
	// call or stream to the next ready one (balancer/roundrobin).
	RoundRobin = "round_robin"
)

// LBPolicies lists the policies the client takes.
var LBPolicies = []string{PickFirst, RoundRobin}

// Defaults of the stream modes.
const (
	DefaultRate         = 10
	DefaultMessageBytes = 1024
	// MaxRate bounds Rate: a thousand messages a second on every stream is past what a
	// long-lived stream carries, and past what a loopback lab can time.
	MaxRate = 1000
)

// Options is one client run.
type Options struct {
	// Target is host:port, or dns:///name:port for round_robin over the addresses DNS
	// returns (a headless Service: one per pod).
	Target      string
	Authority   string // the :authority the gateway routes on ("" = the target)
	Concurrency int    // unary: calls in flight, each a closed loop; stream modes: streams held open
	Connections int    // ClientConns (a channel pool) the calls or streams share round robin (0 = 1)
	Duration    time.Duration
	TLS         bool // HTTP/2 over TLS, the server's certificate not verified
	AllowRemote bool // dial targets off 127.0.0.0/8
	// Mode is Unary ("" too), ServerStream or Bidi.
	Mode string
	// Rate is the messages per second on each stream, MessageBytes each one's payload.
	Rate         float64
	MessageBytes int
	// LB is each ClientConn's policy: PickFirst ("" too) or RoundRobin.
	LB string
	// Addresses are what RoundRobin balances over (the gateway pods' addresses, as a headless
	// Service's DNS name returns them); empty with a dns:/// target, which resolves them.
	Addresses []string
	// Names, with Addresses, resolves the name again when grpc-go asks (ResolveNow, on every
	// lost connection), as a dns:/// target's resolver would; nil keeps Addresses for good.
	Names *Names `json:"-"`
}

// Names is a round_robin name that resolves again: New gives each ClientConn the rule for when
// its resolver answers a ResolveNow (the lab's model.Resolution), Resolve the addresses the
// name answers with then.
type Names struct {
	New     func() Name
	Resolve func() []string
}

// Name is one ClientConn's resolution state.
type Name interface {
	Resolved(now time.Time)
	Request(now time.Time) (time.Time, bool)
}

// Validate says what is wrong with o. It fills the defaults of the fields it checks.
func (o *Options) Validate() error {
	var errs []error
	if o.Mode == "" {
		o.Mode = Unary
	}
	if o.LB == "" {
		o.LB = PickFirst
	}
	if !strings.HasPrefix(o.Target, "dns:///") {
		if _, _, err := net.SplitHostPort(o.Target); err != nil {
			errs = append(errs, fmt.Errorf("target %q: want host:port, or dns:///name:port", o.Target))
		}
	}
	if o.Concurrency < 1 || o.Concurrency > 100000 {
		errs = append(errs, fmt.Errorf("concurrency %d: want 1 to 100000", o.Concurrency))
	}
	if o.Connections < 0 || o.Connections > 1000 {
		errs = append(errs, fmt.Errorf("connections %d: want 0 to 1000", o.Connections))
	}
	if o.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %s: want more than 0", o.Duration))
	}
	if !oneOf(o.Mode, Modes) {
		errs = append(errs, fmt.Errorf("mode %q: allowed %s", o.Mode, strings.Join(Modes, ", ")))
	}
	if o.Mode != Unary {
		if o.Rate == 0 {
			o.Rate = DefaultRate
		}
		if o.MessageBytes == 0 {
			o.MessageBytes = DefaultMessageBytes
		}
	}
	if !(o.Rate >= 0 && o.Rate <= MaxRate) || o.Mode == Unary && o.Rate != 0 {
		errs = append(errs, fmt.Errorf("rate %g messages/s per stream: allowed (0, %d], in the stream modes only", o.Rate, MaxRate))
	}
	if o.MessageBytes < 0 || o.MessageBytes > MaxResponseSize || o.Mode == Unary && o.MessageBytes != 0 {
		errs = append(errs, fmt.Errorf("message bytes %d: allowed 0..%d, in the stream modes only", o.MessageBytes, MaxResponseSize))
	}
	if !oneOf(o.LB, LBPolicies) {
		errs = append(errs, fmt.Errorf("lb %q: allowed %s", o.LB, strings.Join(LBPolicies, ", ")))
	}
	switch {
	case o.LB == PickFirst && len(o.Addresses) > 0:
		errs = append(errs, errors.New("addresses: only round_robin balances over addresses (pick_first keeps the target's one connection)"))
	case o.LB == RoundRobin && len(o.Addresses) == 0 && !strings.HasPrefix(o.Target, "dns:///"):
		errs = append(errs, errors.New("round_robin needs the addresses to balance over, or a dns:/// target that resolves to them"))
	case len(o.Addresses) > 256:
		errs = append(errs, fmt.Errorf("%d addresses: at most 256", len(o.Addresses)))
	}
	for _, a := range o.Addresses {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("address %q: want host:port", a))
		}
	}
	return errors.Join(errs...)
}

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// Result is what the client saw. In the stream modes, Requests counts messages received and
// Latency is each message's delay: against its due time on the server's schedule
// (server-stream), or from its due send time to its echo (bidi).
type Result struct {
	Target      string           `json:"target"`
	Authority   string           `json:"authority"`
	Call        string           `json:"call"`
	Mode        string           `json:"mode"`
	LB          string           `json:"lb"`
	Addresses   int              `json:"addresses,omitempty"`
	Concurrency int              `json:"concurrency"`
	Connections int              `json:"connections"`
	Dials       int              `json:"dials"`
	Requests    int64            `json:"requests"`
	Errors      int64            `json:"errors"`
	Codes       map[string]int64 `json:"status_codes"`
	RPS         float64          `json:"rps"`
	Latency     h2dial.Latency   `json:"latency"`
	// The stream modes: the rate asked for on each stream, the streams opened, how those that
	// ended before the window did ended (status: message), and every connection's streams.
	Rate          float64          `json:"messages_per_s_per_stream,omitempty"`
	StreamsOpened int64            `json:"streams_opened,omitempty"`
	StreamEnds    map[string]int64 `json:"stream_ends,omitempty"`
	Conns         []h2dial.ConnUse `json:"connections_used,omitempty"`
}

// Run drives the client for Duration and returns what it saw: at the deadline, or earlier when
// ctx ends (what ran until then is the result).
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !o.AllowRemote {
		for _, a := range append([]string{o.Target}, o.Addresses...) {
			if strings.HasPrefix(a, "dns:///") {
				return nil, fmt.Errorf("target %s: a dns:/// target resolves off loopback; allow remote targets for it", a)
			}
			if err := h2dial.CheckLoopback(ctx, a); err != nil {
				return nil, err
			}
		}
	}
	cs, err := dialConns(o)
	if err != nil {
		return nil, err
	}
	defer cs.close()
	want := 1
	if o.LB == RoundRobin {
		want = len(o.Addresses) // 0 for a dns:/// target: as many as answer
	}
	if err := cs.prime(ctx, want); err != nil {
		return nil, err
	}
	start := time.Now()
	cs.start(start)
	deadline := start.Add(o.Duration)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	r := &Result{Target: o.Target, Authority: o.Authority, Mode: o.Mode, LB: o.LB, Addresses: len(o.Addresses),
		Concurrency: o.Concurrency, Connections: len(cs.ccs), Codes: map[string]int64{}}
	if o.Mode == Unary {
		r.Call = Call
		runUnary(runCtx, deadline, o, cs, r)
	} else {
		r.Call, r.Rate = CallServerStream, o.Rate
		if o.Mode == Bidi {
			r.Call = CallBidi
		}
		runStreams(runCtx, deadline, o, cs, r)
		r.Conns = cs.used(min(time.Since(start), o.Duration))
	}
	r.Dials = cs.dials()
	r.RPS = float64(r.Requests) / time.Since(start).Seconds()
	return r, nil
}

// Text is the run's summary as a user reads it.
func (r *Result) Text() string {
	var b strings.Builder
	lb := r.LB
	if r.Addresses > 0 {
		lb += fmt.Sprintf(" over %d addresses", r.Addresses)
	}
	fmt.Fprintf(&b, "grpc summary\ntarget: %s (authority %s)\ncall: %s (%s)\n", r.Target, r.Authority, r.Call, r.Mode)
	if r.Mode == Unary || r.Mode == "" {
		fmt.Fprintf(&b, "concurrency: %d over %d ClientConn(s), %s, %d dial(s)\n", r.Concurrency, r.Connections, lb, r.Dials)
		fmt.Fprintf(&b, "requests: %d  errors: %d  rps: %.1f\np50 %.2fms  p99 %.2fms  max %.2fms\n",
			r.Requests, r.Errors, r.RPS, r.Latency.P50, r.Latency.P99, r.Latency.Max)
		return b.String()
	}
	fmt.Fprintf(&b, "streams: %d held open over %d ClientConn(s), %s, %d dial(s); %g messages/s each\n",
		r.Concurrency, r.Connections, lb, r.Dials, r.Rate)
	fmt.Fprintf(&b, "streams opened: %d  failed to open: %d  messages: %d (%.1f/s)\n", r.StreamsOpened, r.Errors, r.Requests, r.RPS)
	for _, k := range sortedKeys(r.StreamEnds) {
		fmt.Fprintf(&b, "streams ended before the window by %s: %d\n", k, r.StreamEnds[k])
	}
	fmt.Fprintf(&b, "message delay p50 %.2fms  p99 %.2fms  max %.2fms\n", r.Latency.P50, r.Latency.P99, r.Latency.Max)
	return b.String()
}
