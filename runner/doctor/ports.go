package doctor

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// portCheck: a host port k3d must publish on 127.0.0.1 is free, or held by the lab's own
// cluster (a lab that is up already).
func portCheck(ctx context.Context, o Options, key string, port int) Check {
	name := "port " + strconv.Itoa(port)
	if !o.PortBusy(port) {
		return Check{name, OK, "free (igwlab:" + key + ")", ""}
	}
	holder := ""
	if out, err := o.Tools.Output(ctx, "docker", "ps", "--filter", "publish="+strconv.Itoa(port), "--format", "{{.Names}}"); err == nil {
		holder = strings.Fields(out + " ")[0]
	}
	if holder != "" && strings.HasPrefix(holder, "k3d-"+o.Stack.Config.ClusterName+"-") {
		return Check{name, OK, "held by the lab's own cluster (" + holder + ")", ""}
	}
	by := "a process on 127.0.0.1"
	if holder != "" {
		by = "container " + holder
	}
	return Check{name, Fail, fmt.Sprintf("in use by %s (igwlab:%s)", by, key),
		fmt.Sprintf("free it (another k3d cluster: k3d cluster stop <name>) or pick another: pulumi config set igwlab:%s <port> -s %s", key, o.Stack.Name)}
}

// PortBusy reports whether 127.0.0.1:port is taken: it cannot be listened on.
func PortBusy(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// Exec is the machine's own tools.
type Exec struct{}

// LookPath implements Tools.
func (Exec) LookPath(name string) (string, error) { return exec.LookPath(name) }

// Output implements Tools.
func (Exec) Output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
