// Command igwlab runs the Istio ingress gateway thread-concentration lab on its local target.
// The real lab's commands and targets are in igwlab-lab, which igwlab runs in its place when a
// command line needs them. See runner/cli/app.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/igwlab/igwlab/runner/cli/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	stop()
	os.Exit(code)
}
