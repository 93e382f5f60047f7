package infra

import (
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/internal/configkey"
)

// IstioRelease is one Istio minor the lab installs: what it needs of the cluster and what it
// is built with. The Envoy release each ships, with its HTTP/2 defaults and codec, is
// stacks.EnvoyForIstio's.
type IstioRelease struct {
	// Minor is "1.31"; Proven is the patch the proof tier (infra/istioproof) runs Istio's own
	// charts and control plane of, "" where the Go module proxy serves no copy of that minor.
	Minor, Proven string
	// GatewayAPI is the Gateway API release its control plane is built with (sigs.k8s.io/
	// gateway-api in its go.mod): the CRDs the lab applies with it.
	GatewayAPI string
	// K8sMin and K8sMax are the Kubernetes minors it supports (1.N).
	K8sMin, K8sMax int
	// EOL is the day its support ended ("" while supported).
	EOL string
	// Source is where those facts are published.
	Source string
}

// IstioReleases are the minors the lab installs, newest first; DefaultIstio is the lab's pin.
// Support: Istio's supportStatus.yml (istio/istio.io data/compatibility) and its policy, six
// weeks after the N+2 minor; 1.31's Kubernetes floor from istioctl's MinK8SVersion (32) in
// istioctl/pkg/install/k8sversion/version.go at its 1.31.0 commit, its ceiling by the policy's
// five minors. The Gateway API releases are each minor's go.mod.
var IstioReleases = []IstioRelease{
	{Minor: "1.31", Proven: "1.31.0", GatewayAPI: "v1.6.0", K8sMin: 32, K8sMax: 36,
		Source: "https://github.com/istio/istio/releases/tag/1.31.0 (commit eed52ebb66ad); istioctl MinK8SVersion 32"},
	{Minor: "1.30", GatewayAPI: "v1.5.1", K8sMin: 32, K8sMax: 36,
		Source: "https://istio.io/latest/docs/releases/supported-releases/ (1.30: Kubernetes 1.32-1.36)"},
	{Minor: "1.27", GatewayAPI: "v1.3.0", K8sMin: 29, K8sMax: 33, EOL: "2026-04-07",
		Source: "https://istio.io/latest/docs/releases/supported-releases/ (1.27: Kubernetes 1.29-1.33, end of life April 7, 2026)"},
}

// DefaultIstio is the Istio release the lab installs unless igwlab:istioVersion says otherwise.
const DefaultIstio = "1.31.0"

// LookupIstio returns the release of an Istio version ("1.31.0").
func LookupIstio(version string) (IstioRelease, error) {
	minor := version
	if parts := strings.Split(version, "."); len(parts) >= 2 {
		minor = parts[0] + "." + parts[1]
	}
	var allowed []string
	for _, r := range IstioReleases {
		if r.Minor == minor && versionPattern.MatchString(version) {
			return r, nil
		}
		allowed = append(allowed, r.Minor+".x"+r.status())
	}
	return IstioRelease{}, &ConfigError{configkey.IstioVersion, version,
		"a patch of an Istio release the lab installs: " + strings.Join(allowed, ", ") + ", such as " + DefaultIstio}
}

func (r IstioRelease) status() string {
	if r.EOL != "" {
		return " (out of support since " + r.EOL + ")"
	}
	return ""
}

// SupportsK8s reports whether the release supports Kubernetes 1.minor, and says so if not.
func (r IstioRelease) SupportsK8s(minor int) (bool, string) {
	if minor >= r.K8sMin && minor <= r.K8sMax {
		return true, ""
	}
	return false, fmt.Sprintf("Istio %s supports Kubernetes 1.%d to 1.%d, not 1.%d", r.Minor, r.K8sMin, r.K8sMax, minor)
}

// gatewayAPIVersion is the Gateway API release the lab applies: the key's, else the one the
// Istio release is built with (an older Istio never becomes ready on CRDs newer than its own,
// a newer one ignores kinds older than its minimums).
func (c Config) gatewayAPIVersion() string {
	if c.GatewayAPIVersion != "" {
		return c.GatewayAPIVersion
	}
	r, err := LookupIstio(c.IstioVersion)
	if err != nil {
		return ""
	}
	return r.GatewayAPI
}
