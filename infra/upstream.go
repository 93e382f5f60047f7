package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Upstream says where the lab's upstream artifacts come from: the internet (Istio's and
// prometheus-community's chart repositories, the Gateway API's release), or, with Dir set, a
// local folder holding them (igwlab:upstreamDir): each chart unpacked as
// `helm pull <repo>/<chart> --version <v> --untar` leaves it, and the Gateway API CRDs as
// gateway-api-standard-install.yaml. The folder replaces only those downloads: images, Pulumi's
// plugins and Go modules still come from the network (docs/real-lab.md, "Without internet access"). It
// serves the tests that run the program's Helm releases from Istio's charts in the Go module
// cache, and hosts whose chart repositories are out of reach.
type Upstream struct {
	Dir string
}

// GatewayAPIFile is the Gateway API CRDs' file name in an upstream folder.
const GatewayAPIFile = "gateway-api-standard-install.yaml"

// IstioCharts are the Istio charts the lab installs.
var IstioCharts = []string{"base", "istiod", "cni", "ztunnel", "gateway"}

// PromChart is kube-prometheus-stack's chart name.
const PromChart = "kube-prometheus-stack"

// releaseAwait is a Helm release's skipAwait: set only when skipping (an API server with no
// nodes, where no pod ever becomes ready), so that a real lab's releases keep their inputs.
func releaseAwait(skip bool) pulumi.BoolPtrInput {
	if !skip {
		return nil
	}
	return pulumi.BoolPtr(true)
}

// chart returns a Helm release's chart and repository: an unpacked chart's folder when Dir is
// set, else the chart's name in repo.
func (u Upstream) chart(name, repo string) (pulumi.StringInput, *helm.RepositoryOptsArgs) {
	if u.Dir == "" {
		return pulumi.String(name), &helm.RepositoryOptsArgs{Repo: pulumi.String(repo)}
	}
	return pulumi.String(filepath.Join(u.Dir, name)), nil
}

// gatewayAPICRDs returns where the Gateway API CRDs are read from.
func (u Upstream) gatewayAPICRDs(version string) string {
	if u.Dir == "" {
		return fmt.Sprintf(gatewayAPICRDsURL, version)
	}
	return filepath.Join(u.Dir, GatewayAPIFile)
}

// missing lists what the folder lacks for a lab with or without monitoring.
func (u Upstream) missing(monitoring bool) []string {
	want := []string{}
	for _, c := range IstioCharts {
		want = append(want, filepath.Join(c, "Chart.yaml"))
	}
	if monitoring {
		want = append(want, filepath.Join(PromChart, "Chart.yaml"))
	}
	want = append(want, GatewayAPIFile)
	var out []string
	for _, w := range want {
		if _, err := os.Stat(filepath.Join(u.Dir, w)); err != nil {
			out = append(out, w)
		}
	}
	return out
}

// check validates the folder: it must be absolute (the program runs from another directory
// than the CLI that set it) and hold every artifact the lab installs.
func (u Upstream) check(monitoring bool) string {
	if u.Dir == "" {
		return ""
	}
	if !filepath.IsAbs(u.Dir) {
		return "an absolute path"
	}
	if m := u.missing(monitoring); len(m) > 0 {
		return "a folder holding the upstream charts and CRDs (helm pull --untar of " + strings.Join(IstioCharts, ", ") +
			" and, with monitoring, " + PromChart + "; and " + GatewayAPIFile + "): it lacks " + strings.Join(m, ", ")
	}
	return ""
}
