package istioproof

import (
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
)

// The istio-cni DaemonSet, rendered by Istio's own chart with the values the program hands it
// for each platform, mounts the host folders that platform's CNI uses: k3s's on the k3d lab
// (its k3s moved the binaries), GKE's binary folder (found by the chart from a GKE version
// string) with the resource quota GKE needs for node-critical pods outside kube-system, and the
// Kubernetes defaults on EKS and AKS, where the AWS VPC CNI and Azure CNI keep their files.
func TestCNIPathsPerPlatform(t *testing.T) {
	in, _, _ := loadLab(t)
	k3d, err := in.Release("cni")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		platform      string
		release       Release
		kube          common.KubeVersion
		bin, conf     string
		resourceQuota bool
	}{
		{"k3d", k3d, KubeVersion, "/var/lib/rancher/k3s/data/cni", "/var/lib/rancher/k3s/agent/etc/cni/net.d", false},
		{"gke", platformRelease(t, in, "gke", "cni"), MustKubeVersion(GKEKubeVersion),
			"/home/kubernetes/bin", "/etc/cni/net.d", true},
		{"eks", platformRelease(t, in, "eks", "cni"), MustKubeVersion(EKSKubeVersion),
			"/opt/cni/bin", "/etc/cni/net.d", false},
		{"aks", platformRelease(t, in, "aks", "cni"), KubeVersion, "/opt/cni/bin", "/etc/cni/net.d", false},
	}
	for _, tc := range cases {
		t.Run(tc.platform, func(t *testing.T) {
			c, err := LoadChart(tc.release.Chart, tc.release.Version)
			if err != nil {
				t.Fatal(err)
			}
			m, err := RenderOn(c, tc.release, tc.kube)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Objects(m)
			if err != nil {
				t.Fatal(err)
			}
			ds := Find(objs, "DaemonSet", "istio-cni-node")
			if ds == nil {
				t.Fatal("the cni chart renders no DaemonSet istio-cni-node")
			}
			vols, _ := At(ds, "spec.template.spec.volumes")
			paths := map[string]any{}
			for _, v := range vols.([]any) {
				vm := v.(map[string]any)
				if hp, ok := vm["hostPath"].(map[string]any); ok {
					paths[vm["name"].(string)] = hp["path"]
				}
			}
			if paths["cni-bin-dir"] != tc.bin || paths["cni-net-dir"] != tc.conf {
				t.Errorf("istio-cni mounts binaries from %v and config from %v, want %s and %s", paths["cni-bin-dir"], paths["cni-net-dir"], tc.bin, tc.conf)
			}
			if got := Find(objs, "ResourceQuota", "istio-cni-resource-quota") != nil; got != tc.resourceQuota {
				t.Errorf("ResourceQuota rendered %v, want %v", got, tc.resourceQuota)
			}
		})
	}
}

// GKEKubeVersion and EKSKubeVersion are Kubernetes versions as those clouds' clusters report
// them (GKE's "-gke." suffix is what Istio's CNI chart detects GKE by).
const (
	GKEKubeVersion = "v1.33.5-gke.1200000"
	EKSKubeVersion = "v1.33.5-eks-3025e55"
)

func platformRelease(t *testing.T, in *Inputs, platform, chart string) Release {
	t.Helper()
	for _, r := range in.Platforms[platform] {
		if r.Chart == chart {
			return r
		}
	}
	t.Fatalf("%s: the program installs no %s chart on %s (go test ./infra -run TestIstioInputs -update)", InputsFile, chart, platform)
	return Release{}
}
