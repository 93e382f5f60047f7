package load

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/internal/registry"
)

// Client is a kind of load client: how it runs in this process against a target address, and
// how it runs in the lab's cluster. Each kind registers itself from its own file; the catalog's
// side of it (the fields it takes, how reports draw it) is stacks.ClientKinds.
type Client struct {
	// Kind is the scenario's client.kind.
	Kind string
	// Run drives the client here, against s.Target.
	Run func(ctx context.Context, s Spec) (*Result, error)
	// InCluster is how the client runs in the lab's cluster.
	InCluster InCluster
}

// InCluster runs a client in the cluster, in a loadgen pod (Exec), and reads what it printed.
type InCluster struct {
	Exec *Exec
	// Read turns the client's output (JSON) into a Result.
	Read func(out []byte) (*Result, error)
}

// Exec runs a command in a running pod of the loadgen namespace.
type Exec struct {
	// Selector picks the pod (a label selector), Container its container.
	Selector, Container string
	// Command is the command line against target (host:port).
	Command func(s Spec, target string) []string
}

var clients = registry.New[string, Client]("load client")

// Register makes a kind of client available to Run and to the cluster target.
func Register(c Client) { clients.Register(c.Kind, c) }

// Lookup returns the client of a kind.
func Lookup(kind string) (Client, error) {
	c, ok := clients.Lookup(kind)
	if !ok {
		return Client{}, fmt.Errorf("load: unknown client %q (allowed %s)", kind, strings.Join(clients.Kinds(), ", "))
	}
	return c, nil
}

// readJSON reads a client's JSON output as its native type and turns it into a Result.
func readJSON[T any](client string, result func(*T) *Result) func([]byte) (*Result, error) {
	return func(out []byte) (*Result, error) {
		var r T
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, fmt.Errorf("reading %s's JSON: %w", client, err)
		}
		return result(&r), nil
	}
}
