package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// outputsOnly is a stack that answers only Name and Outputs.
type outputsOnly struct {
	pulumistack.Stack
	outs map[string]any
}

func (s outputsOnly) Name() string                                    { return "lab" }
func (s outputsOnly) Outputs(context.Context) (map[string]any, error) { return s.outs, nil }

type fixedIdentity struct{ server, uid string }

func (f fixedIdentity) Identity(context.Context) (string, string, error) { return f.server, f.uid, nil }

// The runner refuses to measure a cluster other than the one the stack's last update reached,
// by the kube-system namespace's UID, whatever kubeconfig or address got it there.
func TestSameClusterByKubeSystemUID(t *testing.T) {
	ctx := context.Background()
	sc := stackCluster{kind: infra.ClusterExisting, kubeconfig: "/home/u/.kube/config", context: "prod-eks"}
	stack := outputsOnly{outs: map[string]any{infra.ClusterUIDOutput: "9b2e"}}
	if err := sameCluster(ctx, stack, fixedIdentity{"https://10.0.0.1:6443", "9b2e"}, sc); err != nil {
		t.Errorf("the same cluster at another address is refused: %v", err)
	}
	err := sameCluster(ctx, stack, fixedIdentity{"https://other.example.com", "41aa"}, sc)
	if err == nil {
		t.Fatal("another cluster is measured")
	}
	for _, want := range []string{"https://other.example.com", "kube-system 41aa", "kube-system 9b2e", "context prod-eks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if err := sameCluster(ctx, outputsOnly{outs: map[string]any{}}, fixedIdentity{"https://x", "41aa"}, sc); err != nil {
		t.Errorf("a stack never brought up has no cluster to compare, yet: %v", err)
	}
}
