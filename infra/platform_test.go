package infra

import "testing"

// Every Istio release gets the platform's Istio profile and nothing else decides the CNI
// paths: an existing cluster on GKE or EKS gets no k3s path (istio-cni would wait there for a
// primary CNI config that never appears), the k3d cluster gets Istio's k3s profile (its k3s
// moved the CNI binaries where that profile looks). infra/istioproof renders each through
// Istio's charts and checks the CNI DaemonSet's host paths.
func TestIstioReleasesCarryThePlatformProfile(t *testing.T) {
	existing := func(platform string) func(*Config) {
		return func(c *Config) {
			c.Cluster, c.Kubeconfig, c.Platform = ClusterExisting, "/tmp/kubeconfig", platform
			c.Images.H2dialPushed = "registry.example.com/igwlab/h2dial:v1"
		}
	}
	for _, tc := range []struct {
		name    string
		edit    func(*Config)
		profile string // "": none
	}{
		{"k3d (default)", nil, "k3s"},
		{"existing, gke", existing(PlatformGKE), "gke"},
		{"existing, eks", existing(PlatformEKS), ""},
		{"existing, aks", existing(PlatformAKS), ""},
		{"existing, openshift", existing(PlatformOpenShift), "openshift"},
		{"existing, unset", existing(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := run(t, tc.edit)
			releases := m.istioChartReleases()
			for _, r := range releases {
				values, _ := r.Inputs.Mappable()["values"].(map[string]any)
				got, _ := values["platform"].(string)
				if got != tc.profile {
					t.Errorf("release %s: platform %q, want %q", r.Name, got, tc.profile)
				}
				for _, k := range []string{"cniConfDir", "cniBinDir"} {
					if v, ok := values[k]; ok {
						t.Errorf("release %s sets %s = %v: the platform profile decides it", r.Name, k, v)
					}
				}
			}
			if len(releases) != 5 {
				t.Errorf("%d Istio releases, want base, istiod, istio-cni, ztunnel and the gateway", len(releases))
			}
		})
	}
}

func TestK3sImagesWithTheMovedCNIPaths(t *testing.T) {
	for image, want := range map[string]bool{
		"rancher/k3s:v1.33.4-k3s1": true, "rancher/k3s:v1.32.3-k3s1": true, "rancher/k3s:v1.32.2-k3s1": false,
		"rancher/k3s:v1.31.7-k3s1": true, "rancher/k3s:v1.31.6-k3s2": false, "rancher/k3s:v1.30.14-k3s1": false,
		"rancher/k3s:v2.0.0-k3s1": true, "rancher/k3s:latest": false,
	} {
		if got := k3sCNIMoved(image); got != want {
			t.Errorf("k3sCNIMoved(%s) = %v, want %v", image, got, want)
		}
	}
}
