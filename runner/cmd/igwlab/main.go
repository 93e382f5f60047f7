// Command igwlab runs the Istio ingress gateway thread-concentration lab. See runner/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/igwlab/igwlab/runner/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
