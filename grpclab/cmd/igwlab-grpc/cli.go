package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"

	"github.com/igwlab/igwlab/grpclab"
)

// usageError is a bad command, flag or argument: exit code 2, as flag parsing does.
type usageError struct{ error }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

const usage = `usage:
  igwlab-grpc serve [-addr :9000]     the backend: grpc.testing.TestService, health, reflection
  igwlab-grpc load -target host:port [flags]   the client; its result as JSON on stdout`

// Run runs one subcommand until it is done or ctx ends.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(usage)}
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "load":
		return load(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q\n%s", args[0], usage)}
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("igwlab-grpc serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", ":9000", "address to listen on")
	if err := parse(fs, args); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "igwlab-grpc: serving %s on %s\n", grpclab.Call, l.Addr())
	return grpclab.Serve(ctx, l)
}

func load(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("igwlab-grpc load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o grpclab.Options
	fs.StringVar(&o.Target, "target", "", "host:port to call, or dns:///name:port for -lb round_robin over what DNS returns (required)")
	fs.StringVar(&o.Authority, "authority", "", "the :authority to send (default: the target)")
	fs.IntVar(&o.Concurrency, "concurrency", 50, "calls in flight (unary), or streams held open (stream modes)")
	fs.IntVar(&o.Connections, "connections", 1, "ClientConns (a channel pool) the calls or streams share")
	fs.StringVar(&o.Mode, "mode", grpclab.Unary, "unary, server-stream (a long-lived StreamingOutputCall per stream) or bidi (a FullDuplexCall per stream)")
	fs.Float64Var(&o.Rate, "rate", 0, fmt.Sprintf("stream modes: messages per second on each stream (default %d, at most %d)", grpclab.DefaultRate, grpclab.MaxRate))
	fs.IntVar(&o.MessageBytes, "message-bytes", 0, fmt.Sprintf("stream modes: each message's payload (default %d)", grpclab.DefaultMessageBytes))
	fs.StringVar(&o.LB, "lb", grpclab.PickFirst, "each ClientConn's policy: pick_first (one connection) or round_robin (one per address)")
	fs.Func("address", "round_robin: an address to balance over (repeat it; a headless Service's pods)", func(v string) error {
		o.Addresses = append(o.Addresses, v)
		return nil
	})
	fs.DurationVar(&o.Duration, "duration", 0, "how long to call (required)")
	fs.BoolVar(&o.TLS, "tls", false, "HTTP/2 over TLS, the certificate not verified")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow targets outside 127.0.0.0/8")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	r, err := grpclab.Run(ctx, o)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}
