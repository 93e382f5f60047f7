package infra

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Platforms the lab installs Istio on (igwlab:platform). Each chooses one of the platform
// profiles Istio's charts ship (manifests/helm-profiles/platform-*.yaml, merged by each
// chart's templates/zzz_profile.yaml from its platform value), or none where Istio has
// none and its defaults fit. The profile is what puts istio-cni's files where the node's
// CNI looks for them (cniConfDir, cniBinDir), and sets what else the platform needs (GKE's
// resource quotas for node-critical pods outside kube-system, OpenShift's Multus and SELinux
// type); a wrong one leaves istio-cni waiting for a primary CNI config that never appears,
// and ztunnel and the gateway are never installed.
const (
	// PlatformK3d is the k3d cluster the program creates. Its nodes run k3s, whose CNI
	// binaries moved in k3s 1.31.7 and 1.32.3 to /var/lib/rancher/k3s/data/cni: Istio's k3s
	// profile has the new path, its k3d profile still the old /bin, so k3d gets the k3s one.
	PlatformK3d = "k3d"
	// PlatformK3s is a k3s cluster of the user's (k3s 1.31.7, 1.32.3 or later).
	PlatformK3s = "k3s"
	// PlatformGKE is Google Kubernetes Engine: Istio's gke profile (CNI binaries in
	// /home/kubernetes/bin, found by the chart from the API server's version; resource quotas).
	PlatformGKE = "gke"
	// PlatformEKS is Amazon EKS: Istio has no profile, and its chart defaults are where the
	// AWS VPC CNI keeps its files (/etc/cni/net.d, /opt/cni/bin).
	PlatformEKS = "eks"
	// PlatformAKS is Azure Kubernetes Service: no profile, the chart defaults as for EKS.
	PlatformAKS = "aks"
	// PlatformOpenShift is Red Hat OpenShift: Istio's openshift profile (Multus).
	PlatformOpenShift = "openshift"
	// PlatformMicroK8s and PlatformMinikube have profiles of their own.
	PlatformMicroK8s = "microk8s"
	PlatformMinikube = "minikube"
	// PlatformGeneric is any other cluster whose CNI keeps its files where Kubernetes'
	// conventions put them (/etc/cni/net.d, /opt/cni/bin): kubeadm, kind, Cluster API.
	PlatformGeneric = "generic"
)

// istioPlatform is the Istio platform profile of each platform ("" for Istio's defaults).
var istioPlatform = map[string]string{
	PlatformK3d: "k3s", PlatformK3s: "k3s", PlatformGKE: "gke", PlatformEKS: "", PlatformAKS: "",
	PlatformOpenShift: "openshift", PlatformMicroK8s: "microk8s", PlatformMinikube: "minikube", PlatformGeneric: "",
}

// Platforms lists the values igwlab:platform allows, sorted.
func Platforms() []string {
	var out []string
	for p := range istioPlatform {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func platformsText() string { return strings.Join(Platforms(), ", ") }

// EffectivePlatform is the configured platform, or the cluster kind's default: k3d for the cluster
// the program creates, generic for an existing one.
func (c Config) EffectivePlatform() string {
	switch {
	case c.Platform != "":
		return c.Platform
	case c.Cluster == ClusterK3d:
		return PlatformK3d
	default:
		return PlatformGeneric
	}
}

// istioProfile is the configured platform's Istio platform profile ("" for Istio's defaults).
func (c Config) istioProfile() string { return istioPlatform[c.EffectivePlatform()] }

// withPlatform adds an Istio platform profile to a release's values: every Istio chart reads
// `coalesce .Values.platform .Values.global.platform` (templates/zzz_profile.yaml) and merges
// files/profile-platform-<name>.yaml. The top-level value is the one each chart declares (the
// gateway chart's schema lists it; base, istiod and cni have no global.platform default).
func withPlatform(values pulumi.Map, profile string) pulumi.Map {
	if profile == "" {
		return values
	}
	out := pulumi.Map{"platform": pulumi.String(profile)}
	for k, v := range values {
		out[k] = v
	}
	return out
}

// k3sMinor is the Kubernetes minor of a k3s image (rancher/k3s:v1.33.4-k3s1 is 33; 0 if unreadable).
func k3sMinor(image string) int {
	var major, minor int
	if _, err := fmt.Sscanf(image[strings.LastIndex(image, ":")+1:], "v%d.%d", &major, &minor); err != nil || major != 1 {
		return 0
	}
	return minor
}

// k3sCNIMoved reports that a k3s image (rancher/k3s:vX.Y.Z-k3sN) keeps its CNI binaries in
// /var/lib/rancher/k3s/data/cni, where Istio's k3s profile looks: k3s 1.31.7 and 1.32.3 on.
func k3sCNIMoved(image string) bool {
	var major, minor, patch int
	if _, err := fmt.Sscanf(image[strings.LastIndex(image, ":")+1:], "v%d.%d.%d", &major, &minor, &patch); err != nil {
		return false
	}
	switch {
	case major != 1:
		return major > 1
	case minor == 31:
		return patch >= 7
	case minor == 32:
		return patch >= 3
	default:
		return minor > 32
	}
}
