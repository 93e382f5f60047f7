package doctor

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/stackfile"
	"github.com/igwlab/igwlab/internal/testutil"
)

// fakeTools writes docker, k3d and pulumi as shell scripts that answer as the real tools do
// (docker info's --format template, k3d's and pulumi's version lines) into a folder that is
// then the whole PATH: kubectl, absent from it, is missing.
func fakeTools(t *testing.T, scripts map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

// The fakes answer as the real tools do: docker info's --format template, docker ps -a with
// a label filter (the lab's k3d server node: "owner|state") and with a publish filter (a port's
// holder), k3d's and pulumi's version lines, pulumi whoami --verbose and stack ls --json.
const (
	dockerWith2CPUs = `case "$1" in
info) echo "2 8232873984 28.3.2" ;;
buildx) echo "github.com/docker/buildx v0.22.0 1a3e7d2" ;;
ps) case "$3" in publish=*) echo "pgadmin" ;; esac ;;
esac`
	k3d583    = `echo "k3d version v5.8.3"; echo "k3s version v1.31.5-k3s1 (default)"`
	pulumiOld = `case "$*" in
version) echo "v3.230.0" ;;
whoami*) printf 'User: dev\nOrganizations: \nBackend URL: file:///home/dev/.pulumi\n' ;;
*"stack ls"*) echo '[]' ;;
esac`
	pulumiFresh = `case "$*" in
version) echo "v3.274.1" ;;
whoami*) printf 'User: dev\nOrganizations: \nBackend URL: file:///home/dev/.pulumi\n' ;;
*"stack ls"*) echo '[{"name":"lab","current":true}]' ;;
esac`
	dockerWith8 = `case "$1" in info) echo "8 16465747968 28.3.2" ;; esac`
	kubectlStub = `exit 0`
)

// dockerWithLab is Docker with n CPUs whose ps -a shows the lab's k3d server node as owner|state,
// and its load balancer holding the published ports.
func dockerWithLab(n int, server string) string {
	return fmt.Sprintf(`case "$1" in
info) echo "%d 16465747968 28.3.2" ;;
ps) case "$*" in *k3d.cluster=*) echo %q ;; *publish=*) echo "k3d-igw-tc-lab-serverlb" ;; esac ;;
esac`, n, server)
}

// A first-time user's laptop: Docker with 2 CPUs, an old Pulumi CLI, the gateway's host port
// taken, no kubectl. Each is reported with its fix, and the report fails.
func TestDoctorReportsWhatAFirstRunWouldHit(t *testing.T) {
	fakeTools(t, map[string]string{"docker": dockerWith2CPUs, "k3d": k3d583, "pulumi": pulumiOld})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := infra.Defaults
	cfg.HostPort = l.Addr().(*net.TCPAddr).Port
	cfg.APIPort = testutil.FreePort(t)
	r := Run(context.Background(), Options{Stack: stackOf(cfg), Tools: Exec{}, PortBusy: PortBusy})
	var b bytes.Buffer
	r.Write(&b)
	out := strings.Join(strings.Fields(b.String()), " ")
	t.Log("\n" + b.String())
	for _, want := range []string{
		"ok docker Docker 28.3.2, 2 CPUs, 7.7 GiB",
		"FAIL cpu the lab requests 9.5 CPUs; the Docker VM has 2 CPUs, which each of k3d's 3 nodes reports as its own, so",
		"fix: give the Docker VM at least 4 CPUs",
		"ok k3d v5.8.3",
		"FAIL pulumi v3.230.0 is older than 3.238.0 fix: install the Pulumi CLI 3.238.0 or later",
		"warn kubectl not found on PATH fix: install kubectl",
		"in use by container pgadmin (igwlab:hostPort) fix: free it",
		"ok port", "free (igwlab:apiPort)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if !r.Failed() || r.Err() == nil {
		t.Error("the report does not fail")
	}
	docsShowThisReport(t, b.String())
}

// docsShowThisReport: the real lab's page shows this test's report as a first run meets it;
// every line it shows is one the doctor prints here (it leaves out the ports, which differ).
func docsShowThisReport(t *testing.T, report string) {
	t.Helper()
	root, err := infra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const page = "docs/real-lab.md"
	text, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(text), "```\nok    config ")
	if !ok {
		t.Fatalf("%s shows no doctor report (a block opening with the config check)", page)
	}
	block, _, _ = strings.Cut("ok    config "+block, "```")
	lines := strings.Split(report, "\n")
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if !slices.Contains(lines, l) {
			t.Errorf("%s shows %q; the doctor prints:\n%s", page, l, report)
		}
	}
}

// A machine that has what the lab needs passes; the lab's own cluster may hold its ports.
func TestDoctorPassesAReadyMachine(t *testing.T) {
	fakeTools(t, map[string]string{"docker": dockerWithLab(10, "igwlab/lab|running"),
		"k3d": k3d583, "pulumi": pulumiFresh, "kubectl": kubectlStub})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := infra.Defaults
	cfg.HostPort, cfg.APIPort = l.Addr().(*net.TCPAddr).Port, testutil.FreePort(t)
	r := Run(context.Background(), Options{Stack: stackOf(cfg), Tools: Exec{}, PortBusy: PortBusy})
	if r.Failed() {
		var b bytes.Buffer
		r.Write(&b)
		t.Fatalf("a ready machine fails:\n%s", b.String())
	}
}

// On a cluster of the user's: its identity, and its nodes' allocatable CPU against the lab's.
func TestDoctorOnAnExistingCluster(t *testing.T) {
	fakeTools(t, map[string]string{"pulumi": pulumiFresh, "kubectl": kubectlStub})
	cfg := existing(infra.PlatformGeneric)
	r := Run(context.Background(), Options{Stack: stackOf(cfg), Tools: Exec{}, PortBusy: PortBusy, Cluster: reach(facts(1930, 1930))})
	var b bytes.Buffer
	r.Write(&b)
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"ok cluster https://eks.example.com (kube-system 4f1c), Kubernetes v1.33.5", "FAIL cpu", "2 schedulable nodes offer 3.9", "add nodes of at least"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
	if r := Run(context.Background(), Options{Stack: stackOf(cfg), Tools: Exec{}, PortBusy: PortBusy, Cluster: reach(facts(7910, 7910, 7910))}); r.Failed() {
		var b bytes.Buffer
		r.Write(&b)
		t.Errorf("three 8-CPU nodes fail:\n%s", b.String())
	}
}

// A Docker VM of 3 CPUs holds the small lab and not the full one: the doctor says so, with the
// profile as the fix, and passes the small lab's stack on the same machine.
func TestDoctorSuggestsTheSmallLab(t *testing.T) {
	fakeTools(t, map[string]string{"docker": `case "$1" in info) echo "3 8232873984 28.3.2" ;; esac`,
		"k3d": k3d583, "pulumi": pulumiFresh, "kubectl": kubectlStub})
	for _, tc := range []struct {
		profile string
		want    string
	}{
		{infra.ProfileFull, "or run the small lab (4 gateway pods, one of each backend; the robust findings held at that size on the local target): pulumi config set igwlab:profile small -s lab"},
		{infra.ProfileSmall, "ok cpu the lab requests 7.2 CPUs; the Docker VM has 3 CPUs"},
	} {
		cfg := infra.Defaults.WithProfile(tc.profile)
		cfg.HostPort, cfg.APIPort = testutil.FreePort(t), testutil.FreePort(t)
		r := Run(context.Background(), Options{Stack: stackOf(cfg), Tools: Exec{}, PortBusy: PortBusy})
		var b bytes.Buffer
		r.Write(&b)
		if out := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(out, tc.want) {
			t.Errorf("profile %s: the report lacks %q:\n%s", tc.profile, tc.want, b.String())
		}
		if failed := r.Failed(); failed != (tc.profile == infra.ProfileFull) {
			t.Errorf("profile %s: failed = %v", tc.profile, failed)
		}
	}
}

// stackOf is a stack named lab with cfg, as ReadStack would give it.
func stackOf(cfg infra.Config) Stack {
	return Stack{Name: "lab", Config: cfg, File: stackfile.Config{StackFile: "Pulumi.lab.yaml", StackFileExists: true}}
}

// existing is the lab on a cluster of the user's, on platform.
func existing(platform string) infra.Config {
	cfg := infra.Defaults
	cfg.Cluster, cfg.Kubeconfig, cfg.Platform = infra.ClusterExisting, "/tmp/kubeconfig", platform
	cfg.Images.H2dialPushed = "registry.example.com/igwlab/h2dial:v1"
	return cfg
}

// facts is a cluster admin's view of an amd64 cluster of Kubernetes 1.33 whose schedulable
// nodes offer the given CPUs, with nothing installed.
func facts(cpus ...int64) ClusterFacts {
	f := ClusterFacts{Server: "https://eks.example.com", UID: "4f1c", Version: "v1.33.5", Minor: 33, ClusterAdmin: true}
	for i, c := range cpus {
		f.Nodes = append(f.Nodes, NodeFacts{Name: fmt.Sprintf("node-%d", i), Arch: "amd64", CPUMilli: c, Schedulable: true})
	}
	return f
}

func reach(f ClusterFacts) func(context.Context, string, string) (ClusterFacts, error) {
	return func(context.Context, string, string) (ClusterFacts, error) { return f, nil }
}
