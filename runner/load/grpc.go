package load

import (
	"context"
	"fmt"

	"github.com/igwlab/igwlab/grpclab"
)

// The gRPC client keeps one ClientConn and queues at the stream limit (grpclab.Run): it runs
// in this process, and in the lab's cluster as /igwlab-grpc in the h2dial pod, whose image
// carries it (one image the lab builds for the machine's own architecture).
func init() {
	Register(Client{Kind: "grpc", Run: runGRPC, InCluster: InCluster{
		Exec: &Exec{Selector: "app=h2dial", Container: "h2dial",
			Command: func(s Spec, target string) []string { return append([]string{"/igwlab-grpc"}, GRPCArgs(s, target)...) }},
		Read: readJSON("igwlab-grpc", FromGRPC)}})
}

// RoundRobin is the gRPC client's policy that balances over addresses: a target fills in
// Spec.Addresses for it.
const RoundRobin = grpclab.RoundRobin

func grpcOptions(s Spec) grpclab.Options {
	return grpclab.Options{Target: s.Target, Authority: s.Authority, Concurrency: s.Concurrency,
		Connections: s.Connections, Duration: s.Duration, TLS: s.TLS, AllowRemote: s.AllowRemote,
		Mode: s.Mode, Rate: s.Rate, MessageBytes: s.MessageBytes, LB: s.LB, Addresses: s.Addresses, Names: s.Names}
}

func runGRPC(ctx context.Context, s Spec) (*Result, error) {
	r, err := grpclab.Run(ctx, grpcOptions(s))
	if err != nil {
		return nil, err
	}
	return FromGRPC(r), nil
}

// GRPCArgs is igwlab-grpc's command line for a spec against target (host:port), in a cluster.
func GRPCArgs(s Spec, target string) []string {
	o := grpcOptions(s)
	args := []string{"load", "-target", target, fmt.Sprintf("-concurrency=%d", o.Concurrency),
		fmt.Sprintf("-connections=%d", max(1, o.Connections)), "-duration", o.Duration.String(), "-allow-remote"}
	if o.Authority != "" {
		args = append(args, "-authority", o.Authority)
	}
	if o.TLS {
		args = append(args, "-tls")
	}
	if o.Mode != "" && o.Mode != grpclab.Unary {
		args = append(args, "-mode", o.Mode, fmt.Sprintf("-rate=%g", o.Rate), fmt.Sprintf("-message-bytes=%d", o.MessageBytes))
	}
	if o.LB != "" && o.LB != grpclab.PickFirst {
		args = append(args, "-lb", o.LB)
	}
	for _, a := range o.Addresses {
		args = append(args, "-address", a)
	}
	return args
}

// FromGRPC is the client's result as a Result.
func FromGRPC(r *grpclab.Result) *Result {
	return &Result{Client: "grpc", Requests: r.Requests, Errors: r.Errors, RPS: r.RPS, Latency: r.Latency,
		ConnectionsOpened: r.Dials, StreamsOpened: r.StreamsOpened, StreamEnds: r.StreamEnds, Conns: r.Conns,
		Native: r, Text: r.Text()}
}
