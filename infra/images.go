package infra

import "strings"

// Every container the program itself names runs either the lab's own image (Images.H2dial:
// h2dial and grpclab, built from Go by `docker build` on the user's machine, so for its
// architecture, or pushed by the user for their cluster's) or one of these public images,
// each pinned once in Defaults and published for both linux/amd64 and linux/arm64, so that an
// Apple Silicon laptop's k3d runs the lab as an Intel one does. The charts' own images (Istio's
// pilot, proxyv2, install-cni and ztunnel; kube-prometheus-stack's) come with the charts'
// pinned versions, and both projects publish them for both. The platforms are the publishers'
// manifest lists, which no registry here can show: a new pin must be checked with
// `docker manifest inspect IMAGE` before it joins this list.
//
// The seed lab's gRPC images were amd64 only: ghcr.io/bojand/ghz (bojand/ghz#464) and
// moul/grpcbin. Their roles are grpclab's now (igwlab-grpc load, igwlab-grpc serve).
func publicImages(c Config) []string {
	return []string{c.Images.HTTPBin, c.Images.Fortio, c.K3sImage}
}

// PublicImages are the public images the lab's defaults pin, by reference.
func PublicImages() []string { return publicImages(Defaults) }

// imageRepo is a reference's repository: without its tag or digest.
func imageRepo(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}
