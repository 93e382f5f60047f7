package stacks

import (
	"fmt"
	"slices"
	"strings"
)

// ClientKind is what the catalog knows of a kind of load client: the client fields it takes,
// and how reports draw it. How it runs is runner/load's (load.Register, one file per kind).
type ClientKind struct {
	// Kind is client.kind.
	Kind string
	// Modes are the transport layouts client.mode takes; none: the client has no mode.
	Modes []string
	// Connections says the client takes client.connections, its own connection count (0
	// means 1); other clients' connections follow from mode and concurrency.
	Connections bool
	// NoPath says the client calls a fixed method rather than client.path.
	NoPath bool
	// SlowMode is the mode in which slow workers may share the fast workers' transport
	// (client.slow); "" means the client takes none.
	SlowMode string
	// Shade is how plots draw its bars: dark, light or orange.
	Shade string
	// Uploads says the client takes client.body_bytes: it POSTs a body of that size.
	Uploads bool
	// TimedFromSend says the client times a request from when it sends it rather than from when
	// it was due, so its latencies are far smaller and are plotted on a scale of their own.
	TimedFromSend bool
	// OpenLoop says that given client.qps the client sends at that constant rate whatever the
	// responses do, and times each request from when it was due: what a capacity search needs.
	OpenLoop bool
	// DialsAtCapMode is the mode in which all of the client's streams share one transport that
	// opens another connection only when every one it holds is at the gateway's stream cap
	// (x/net's Transport); "" means the client has none.
	DialsAtCapMode string
	// DefaultMode is the mode of a client that names none ("": the mode must be given).
	DefaultMode string
	// StreamModes are the modes in which each of the client's Concurrency goroutines holds one
	// long-lived stream carrying client.message_rate messages a second of client.message_bytes.
	StreamModes []string
	// LBs are the load-balancing policies client.lb takes (the first is the default); none:
	// the client takes none.
	LBs []string
	// ClosedLoop says the client takes no client.qps: each of its calls is made when the one
	// before it ends, so its rate is what its concurrency and the pool give it.
	ClosedLoop bool
	// LongStreams says the client takes client.long_stream: each request is a long-lived
	// stream read as it arrives (an event stream, a long poll), opened again when it ends.
	LongStreams bool
}

// ClientKinds are the lab's clients: h2dial dials new connections at the stream cap (or holds
// long-lived event streams), fortio is a fixed pool that queues, and the gRPC client keeps one
// ClientConn per connection (as ghz --connections does), or one per address with round_robin,
// making unary calls or holding server-streaming or bidirectional streams.
var ClientKinds = []ClientKind{
	{Kind: "h2dial", Modes: []string{"shared", "distinct"}, SlowMode: "shared", Shade: "dark", Uploads: true, OpenLoop: true,
		DialsAtCapMode: "shared", LongStreams: true},
	{Kind: "fortio", Shade: "light", TimedFromSend: true},
	{Kind: "grpc", Modes: []string{GRPCUnary, GRPCServerStream, GRPCBidi}, DefaultMode: GRPCUnary,
		StreamModes: []string{GRPCServerStream, GRPCBidi}, LBs: []string{"pick_first", "round_robin"},
		Connections: true, NoPath: true, Shade: "orange", ClosedLoop: true},
}

// The gRPC client's modes (grpclab's).
const (
	GRPCUnary        = "unary"
	GRPCServerStream = "server-stream"
	GRPCBidi         = "bidi"
)

// Defaults of a stream mode's messages (grpclab's).
const (
	DefaultMessageRate  = 10
	DefaultMessageBytes = 1024
	maxMessageRate      = 1000
)

// LongLived says the scenario's client holds long-lived streams: a gRPC stream mode, or
// h2dial's long_stream.
func (c Client) LongLived() bool {
	k, _ := LookupClient(c.Kind)
	return c.LongStream || slices.Contains(k.StreamModes, c.Mode)
}

// LookupClient returns the kind of client named kind.
func LookupClient(kind string) (ClientKind, bool) {
	for _, c := range ClientKinds {
		if c.Kind == kind {
			return c, true
		}
	}
	return ClientKind{}, false
}

// DialsAtCap says the client sends every stream on one transport that dials another
// connection only at the gateway's stream cap (h2dial in mode shared).
func (c Client) DialsAtCap() bool {
	k, ok := LookupClient(c.Kind)
	return ok && k.DialsAtCapMode != "" && c.Mode == k.DialsAtCapMode
}

// DialsAtCapClients names the clients DialsAtCap holds for, with their mode.
func DialsAtCapClients() string {
	var out []string
	for _, k := range ClientKinds {
		if k.DialsAtCapMode != "" {
			out = append(out, fmt.Sprintf("%s on one shared transport (mode %s)", k.Kind, k.DialsAtCapMode))
		}
	}
	return strings.Join(out, " or ")
}

// clientNames lists the kinds for which keep holds, in table order.
func clientNames(keep func(ClientKind) bool) []string {
	var out []string
	for _, c := range ClientKinds {
		if keep(c) {
			out = append(out, c.Kind)
		}
	}
	return out
}

// checkClient validates the client section against its kind's table entry, with validate's
// reporters: bad for a field's problem, intRange, qpsRange and oneOf for values out of range.
func checkClient(s *Scenario, bad func(field, msg string), intRange func(field string, v int), qpsRange func(field string, v float64),
	oneOf func(field, v string, allowed []string)) {
	c := s.Client
	oneOf("client.kind", c.Kind, clientNames(func(ClientKind) bool { return true }))
	intRange("client.concurrency", c.Concurrency)
	kind, _ := LookupClient(c.Kind)
	if c.Mode == "" && kind.DefaultMode != "" {
		s.Client.Mode, c.Mode = kind.DefaultMode, kind.DefaultMode
	}
	if len(kind.Modes) > 0 {
		oneOf("client.mode", c.Mode, kind.Modes)
	} else if c.Mode != "" {
		bad("client.mode", "only "+strings.Join(clientNames(func(k ClientKind) bool { return len(k.Modes) > 0 }), ", ")+" has a transport mode")
	}
	if kind.Connections {
		if c.Connections == 0 {
			s.Client.Connections = 1
		}
		intRange("client.connections", s.Client.Connections)
	} else if c.Connections != 0 {
		bad("client.connections", fmt.Sprintf("only the %s client takes a connection count (%s connections follow from mode and concurrency)",
			strings.Join(clientNames(func(k ClientKind) bool { return k.Connections }), ", "),
			strings.Join(clientNames(func(k ClientKind) bool { return !k.Connections }), " and ")))
	}
	if !kind.NoPath && !strings.HasPrefix(c.Path, "/") {
		bad("client.path", fmt.Sprintf("%q must start with /", c.Path))
	}
	qpsRange("client.qps", c.QPS)
	if kind.ClosedLoop {
		for _, f := range []struct {
			field string
			v     float64
		}{{"client.qps", c.QPS}, {"local.client.qps", s.Local.Client.QPS}} {
			if f.v != 0 {
				bad(f.field, fmt.Sprintf("the %s client runs closed-loop and takes no rate (each call is made when one ends): set client.concurrency, the calls in flight", c.Kind))
			}
		}
	}
	if c.BodyBytes != 0 {
		if !kind.Uploads {
			bad("client.body_bytes", "only "+strings.Join(clientNames(func(k ClientKind) bool { return k.Uploads }), ", ")+" uploads a request body")
		}
		intRange("client.body_bytes", c.BodyBytes)
	}
	if c.Slow != nil {
		if kind.SlowMode == "" || c.Mode != kind.SlowMode {
			var with []string
			for _, k := range ClientKinds {
				if k.SlowMode != "" {
					with = append(with, "client.kind "+k.Kind+" with mode "+k.SlowMode)
				}
			}
			bad("client.slow", "slow workers need "+strings.Join(with, " or ")+" (they share the fast workers' transport)")
		}
		if !strings.HasPrefix(c.Slow.Path, "/") {
			bad("client.slow.path", fmt.Sprintf("%q must start with /", c.Slow.Path))
		}
		intRange("client.slow.workers", c.Slow.Workers)
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			bad("client.headers", fmt.Sprintf("%q is not a header name", k))
		}
	}
	checkStreams(s, kind, bad, intRange, oneOf)
}

// checkStreams validates the fields of long-lived streams and of the gRPC client's balancing.
func checkStreams(s *Scenario, kind ClientKind, bad func(field, msg string), intRange func(field string, v int),
	oneOf func(field, v string, allowed []string)) {
	c := &s.Client
	streaming := slices.Contains(kind.StreamModes, c.Mode)
	var modes []string
	for _, k := range ClientKinds {
		for _, m := range k.StreamModes {
			modes = append(modes, k.Kind+" "+m)
		}
	}
	if !streaming && (c.MessageRate != 0 || c.MessageBytes != 0) {
		field := "client.message_rate"
		if c.MessageRate == 0 {
			field = "client.message_bytes"
		}
		bad(field, "only a client holding streams of messages takes it: client.kind and client.mode "+strings.Join(modes, " or "))
	}
	if streaming {
		if c.MessageRate == 0 {
			c.MessageRate = DefaultMessageRate
		}
		if c.MessageBytes == 0 {
			c.MessageBytes = DefaultMessageBytes
		}
		if !(c.MessageRate > 0 && c.MessageRate <= maxMessageRate) {
			bad("client.message_rate", fmt.Sprintf("%g is out of range (allowed %s)", c.MessageRate, allowedRange("client.message_rate")))
		}
		intRange("client.message_bytes", c.MessageBytes)
	}
	if len(kind.LBs) == 0 {
		if c.LB != "" {
			bad("client.lb", "only "+strings.Join(clientNames(func(k ClientKind) bool { return len(k.LBs) > 0 }), ", ")+" balances over addresses")
		}
	} else {
		if c.LB == "" {
			c.LB = kind.LBs[0]
		}
		oneOf("client.lb", c.LB, kind.LBs)
	}
	if c.LongStream && !kind.LongStreams {
		bad("client.long_stream", "only "+strings.Join(clientNames(func(k ClientKind) bool { return k.LongStreams }), ", ")+" holds long-lived event streams (a gRPC client's are its stream modes)")
	}
}
