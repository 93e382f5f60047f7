package suite

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/gateway/cluster"
	"github.com/igwlab/igwlab/runner/gateway/gatewaytest"
	"github.com/igwlab/igwlab/stacks"
)

// TestSecretsNeverReachResults runs the suite on the real-lab path with a stack that holds a
// Grafana password and a kubeconfig: neither may appear in anything the run prints or writes.
func TestSecretsNeverReachResults(t *testing.T) {
	const password, kubeToken = "gr4fana-s3cret-7d1e", "kube-token-0f9a2c"
	k := gatewaytest.NewKube(3, 1)
	st := &gatewaytest.Stack{KubeRef: k, Config: map[string]string{
		"igwlab:grafanaPassword": password,
		"igwlab:kubeconfig":      "/home/u/.kube/config-with-" + kubeToken,
	}}
	var progress strings.Builder
	c := cluster.NewCluster(cluster.ClusterOptions{Name: "k3d", Kube: k, Stack: st, DrainTimeout: time.Second, Progress: &progress})
	cat, _ := stacks.Builtin()
	out := t.TempDir()
	sum, err := Run(context.Background(), Options{Target: c, Catalog: cat, Only: []string{"02-trigger"},
		Duration: time.Second, OutDir: out, Progress: &progress, Command: []string{"suite", "--target", "k3d"}})
	if err != nil || sum.Scenarios["02-trigger"].Status != "ok" {
		t.Fatalf("%v %+v", err, sum.Scenarios["02-trigger"])
	}
	files := 0
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		for _, s := range []string{password, kubeToken} {
			if strings.Contains(string(b), s) {
				t.Errorf("%s contains a secret", p)
			}
		}
		return err
	})
	if err != nil || files < 10 {
		t.Fatalf("walked %d files: %v", files, err)
	}
	if strings.Contains(progress.String(), password) || strings.Contains(progress.String(), kubeToken) {
		t.Error("the progress output contains a secret")
	}
}
