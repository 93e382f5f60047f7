package doctor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/testutil"
)

// report runs the doctor and returns its report, flattened to one line per check.
func report(t *testing.T, o Options) (string, Report) {
	t.Helper()
	if o.Tools == nil {
		o.Tools = Exec{}
	}
	if o.PortBusy == nil {
		o.PortBusy = PortBusy
	}
	r := Run(context.Background(), o)
	var b bytes.Buffer
	r.Write(&b)
	return strings.Join(strings.Fields(b.String()), " "), r
}

// TestDoctorOnAClusterThatIsNotEmpty: what a platform engineer's cluster brings that the lab
// would fight with or trip on, each found from the API server's answers and named with its fix.
func TestDoctorOnAClusterThatIsNotEmpty(t *testing.T) {
	fakeTools(t, map[string]string{"pulumi": pulumiFresh, "kubectl": kubectlStub,
		"docker": `case "$*" in *imagetools*Manifest*) echo '{"schemaVersion":2,"manifests":[{"platform":{"architecture":"arm64","os":"linux"}},{"platform":{"architecture":"unknown","os":"unknown"}}]}' ;; esac`})
	gkeCRD := &ObjectFacts{Annotations: map[string]string{"components.gke.io/component-name": "gateway-api-crds",
		"gateway.networking.k8s.io/bundle-version": "v1.2.1"}, Labels: map[string]string{"addonmanager.kubernetes.io/mode": "NewerRevision"}}
	for _, tc := range []struct {
		name  string
		cfg   func(*infra.Config)
		facts func(*ClusterFacts)
		fail  []string
		ok    []string
	}{
		{"GKE's own Gateway API CRDs", nil, func(f *ClusterFacts) { f.GatewayCRD = gkeCRD },
			[]string{"FAIL gateway api the cluster's Gateway API CRDs (v1.2.1) are managed by GKE", "pulumi config set igwlab:installGatewayApiCrds false -s lab"}, nil},
		{"kept when asked", func(c *infra.Config) { c.InstallGatewayAPICRDs = false }, func(f *ClusterFacts) { f.GatewayCRD = gkeCRD },
			nil, []string{"ok gateway api the cluster's own (v1.2.1, managed by GKE"}},
		{"an Istio of the cluster's", nil, func(f *ClusterFacts) { f.Istiods = []string{"istio-system/istiod-1-29"} },
			[]string{"FAIL istio Istio already runs (istio-system/istiod-1-29)", "would fight over them"}, nil},
		{"the lab's own Istio", nil, func(f *ClusterFacts) { f.Istiods, f.LabInstalled = []string{"istio-system/istiod"}, true },
			nil, []string{"ok istio the lab's own"}},
		{"another team's prometheus-operator", nil, func(f *ClusterFacts) { f.PromOperators = []string{"observability/kps-operator"} },
			[]string{"FAIL monitoring a prometheus-operator already runs (observability/kps-operator)", "pulumi config set igwlab:monitoring false -s lab"}, nil},
		{"namespaces taken", nil, func(f *ClusterFacts) { f.ForeignNamespaces = []string{"monitoring"} },
			[]string{"FAIL namespaces", "monitoring"}, nil},
		{"no cluster-admin", nil, func(f *ClusterFacts) {
			f.ClusterAdmin, f.Missing = false, []string{"create customresourcedefinitions.apiextensions.k8s.io", "get nodes/proxy"}
		}, []string{"FAIL permissions the lab installs cluster-wide and you may not: create customresourcedefinitions.apiextensions.k8s.io, get nodes/proxy"}, nil},
		{"GKE's nodes, generic platform", nil, func(f *ClusterFacts) { f.Nodes[0].ProviderID = "gce://proj/europe-west1-b/gke-n1" },
			[]string{"FAIL platform the nodes are GKE's", "pulumi config set igwlab:platform gke -s lab"}, nil},
		{"GKE's nodes, gke platform", func(c *infra.Config) { c.Platform = infra.PlatformGKE }, func(f *ClusterFacts) { f.Nodes[0].ProviderID = "gce://proj/europe-west1-b/gke-n1" },
			nil, []string{"ok platform gke", "warn webhook", "--allow tcp:10250,tcp:443,tcp:15017"}},
		{"an arm64 image for amd64 nodes", nil, nil,
			[]string{"FAIL image registry.example.com/igwlab/h2dial:v1 is built for linux/arm64 and the nodes run amd64", "exec format error",
				"make image IMAGE=registry.example.com/igwlab/h2dial:v1 PLATFORMS=linux/amd64"}, nil},
		{"Kubernetes older than the Istio", nil, func(f *ClusterFacts) { f.Version, f.Minor = "v1.30.4", 30 },
			[]string{"FAIL kubernetes Istio 1.31 supports Kubernetes 1.32 to 1.36, not 1.30"}, nil},
		{"Kubernetes 1.33 for Istio 1.31", nil, nil, nil, []string{"ok kubernetes 1.33, which Istio 1.31 supports (1.32-1.36)"}},
	} {
		cfg := existing(infra.PlatformGeneric)
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		f := facts(8000, 8000, 8000)
		if tc.facts != nil {
			tc.facts(&f)
		}
		out, _ := report(t, Options{Stack: stackOf(cfg), Cluster: reach(f)})
		for _, w := range append(tc.fail, tc.ok...) {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the report lacks %q:\n%s", tc.name, w, out)
			}
		}
	}
}

// TestDoctorNamesAStoppedLabAndBuildKit: a stopped lab cluster is named with how to start it,
// and a Docker without BuildKit fails where the program builds the lab's image.
func TestDoctorNamesAStoppedLabAndBuildKit(t *testing.T) {
	cfg := infra.Defaults
	cfg.HostPort, cfg.APIPort = testutil.FreePort(t), testutil.FreePort(t)
	fakeTools(t, map[string]string{"docker": dockerWithLab(10, "igwlab/lab|exited"), "k3d": k3d583, "pulumi": pulumiFresh, "kubectl": kubectlStub})
	out, _ := report(t, Options{Stack: stackOf(cfg)})
	for _, w := range []string{"warn k3d cluster igw-tc-lab is this stack's and is stopped (exited)", "fix: pulumi up -s lab starts it, or k3d cluster start igw-tc-lab"} {
		if !strings.Contains(out, w) {
			t.Errorf("the report lacks %q:\n%s", w, out)
		}
	}
	noBuildx := `case "$1" in info) echo "10 16465747968 28.3.2" ;; buildx) echo "docker: 'buildx' is not a docker command." >&2; exit 1 ;; esac`
	fakeTools(t, map[string]string{"docker": noBuildx, "k3d": k3d583, "pulumi": pulumiFresh, "kubectl": kubectlStub})
	out, r := report(t, Options{Stack: stackOf(cfg)})
	if !strings.Contains(out, "FAIL buildkit Docker 28.3.2 builds with BuildKit through the buildx plugin") || !r.Failed() {
		t.Errorf("no BuildKit passes:\n%s", out)
	}
	cfg.Images.H2dialPushed = "registry.example.com/igwlab/h2dial:v1"
	if out, _ := report(t, Options{Stack: stackOf(cfg)}); strings.Contains(out, "buildkit") {
		t.Errorf("BuildKit is checked where nothing is built:\n%s", out)
	}
}

// TestDoctorReportsAMachineWithoutPulumi: no Pulumi CLI, no Docker, no cluster: each is named
// with its fix and nothing else is attempted through them.
func TestDoctorReportsAMachineWithoutPulumi(t *testing.T) {
	fakeTools(t, map[string]string{})
	cfg := infra.Defaults
	cfg.HostPort, cfg.APIPort = testutil.FreePort(t), testutil.FreePort(t)
	out, r := report(t, Options{Stack: stackOf(cfg)})
	for _, w := range []string{"FAIL docker not found on PATH fix: install Docker", "FAIL k3d not found on PATH", "FAIL pulumi not found on PATH fix: install the Pulumi CLI 3.238.0 or later", "warn kubectl not found"} {
		if !strings.Contains(out, w) {
			t.Errorf("the report lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "login") || !r.Failed() {
		t.Errorf("without the CLI the login is still checked, or the report passes:\n%s", out)
	}
}

// TestHostSharedMarksTheResults: a k3d lab whose pods request more CPUs than the Docker VM has
// cores carries that into every scenario's results as a departure from the lab; one that fits
// carries nothing.
func TestHostSharedMarksTheResults(t *testing.T) {
	for _, tc := range []struct {
		ncpu string
		want bool
	}{{"4", true}, {"16", false}, {"not a number", false}} {
		fakeTools(t, map[string]string{"docker": `echo "` + tc.ncpu + `"`})
		d := HostShared(context.Background(), Exec{}, infra.Defaults)
		if (d != nil) != tc.want {
			t.Errorf("%s cores: departure %+v, want one: %v", tc.ncpu, d, tc.want)
		}
		if d != nil && (!strings.Contains(d.Lab, "9.5") || !strings.Contains(d.Local, "4, the Docker VM's")) {
			t.Errorf("%s cores: %+v", tc.ncpu, d)
		}
	}
}

// TestReadStackReadsEverySizingKey: the doctor reads a stack's files as the program reads its
// config, every key that sizes the lab included (the gateway's CPU limit and request, the
// profile, the replicas): the CPU it holds the machine to is what the pods will request.
func TestReadStackReadsEverySizingKey(t *testing.T) {
	root, err := infra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	project, err := os.ReadFile(filepath.Join(root, "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), project, 0o644); err != nil {
		t.Fatal(err)
	}
	stack := "encryptionsalt: v1:abc\nconfig:\n  igwlab:profile: small\n  igwlab:proxyConcurrency: \"4\"\n  igwlab:gatewayCpuLimit: \"2\"\n  igwlab:gatewayCpuRequest: 1500m\n  igwlab:waypointReplicas: \"1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.lab.yaml"), []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadStack(dir, "lab")
	if err != nil || s.ConfigErr != nil {
		t.Fatal(err, s.ConfigErr)
	}
	limit, req := s.Config.GatewayCPU()
	if s.Config.GatewayReplicas != 4 || s.Config.ProxyConcurrency != 4 || limit.String() != "2" || req.String() != "1500m" || s.Config.WaypointReplicas != 1 || !s.File.Passphrase {
		t.Errorf("read %d pods of %d workers, CPU %s/%s, %d waypoints, passphrase %v", s.Config.GatewayReplicas, s.Config.ProxyConcurrency, limit, req, s.Config.WaypointReplicas, s.File.Passphrase)
	}
	_, total := s.Config.K3dNeeds()
	want := infra.Total(s.Config.Requests(infra.K3dNodes)).CPUMilli
	if total.CPUMilli != want || want != 4*1500+500+3*200+3*100+100+200+100+500+500+2*100 {
		t.Errorf("the doctor holds the machine to %dm, the pods request %dm", total.CPUMilli, want)
	}
	if c := configCheck(s); c.Status != OK || !strings.Contains(c.Seen, "Pulumi.lab.yaml over Pulumi.yaml's defaults") || !strings.Contains(c.Seen, "4 gateway pods of 4 worker(s) and 2 CPU") {
		t.Errorf("config check: %+v", c)
	}
}
