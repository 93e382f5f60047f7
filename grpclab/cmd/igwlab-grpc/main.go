// Command igwlab-grpc is the lab's gRPC backend (serve) and gRPC load client (load), as its
// image runs them in the cluster. See package grpclab.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "igwlab-grpc:", err)
		os.Exit(exitCode(err))
	}
}
