// Command igwlab-lab is igwlab with the real lab linked in: the Pulumi stack's commands (up,
// preview, kubeconfig) and its targets (runner/gateway/cluster). igwlab runs it for
// those command lines; it runs every other command line itself too. See runner/cli.
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
