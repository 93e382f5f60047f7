package infra

import (
	"slices"
	"strings"
	"testing"
)

// Every container the program renders runs the lab's own image
// (built for the machine's architecture) or a public image pinned in the list of those
// published for amd64 and arm64: nothing an arm64 laptop's containerd would refuse. The seed
// lab's grpcbin (amd64 only) failed this.
func TestEveryContainerRunsTheLabsImageOrAMultiArchPin(t *testing.T) {
	allowed := PublicImages()
	// The scenarios differ in the EnvoyFilter and the waypoint (which istiod deploys), not in
	// the containers the program names.
	for _, sc := range []string{"12-grpc-variant"} {
		m := run(t, scenario(sc))
		seen := 0
		for _, r := range m.res {
			if !strings.HasPrefix(r.TypeToken, "kubernetes:apps/v1:") && !strings.HasPrefix(r.TypeToken, "kubernetes:batch/v1:") {
				continue
			}
			spec, _ := r.Inputs.Mappable()["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			pod, _ := tmpl["spec"].(map[string]any)
			ctrs, _ := pod["containers"].([]any)
			for _, c := range ctrs {
				img, _ := c.(map[string]any)["image"].(string)
				seen++
				if imageRepo(img) == Defaults.Images.H2dial || slices.Contains(allowed, img) {
					continue
				}
				t.Errorf("%s: %s %s runs %s, neither the lab's own image (%s) nor a pin published for amd64 and arm64 (%v)",
					sc, r.TypeToken, r.Name, img, Defaults.Images.H2dial, allowed)
			}
		}
		if seen < 4 {
			t.Fatalf("%s: only %d containers rendered", sc, seen)
		}
	}
}

// The gRPC backend is the lab's own server from the lab's image, started as `igwlab-grpc serve`
// on the port its Service and route name.
func TestGRPCBackendRunsTheLabsServer(t *testing.T) {
	m := run(t, nil)
	d := m.find("kubernetes:apps/v1:Deployment", "grpcbin")
	if d == nil {
		t.Fatal("no grpcbin Deployment")
	}
	ctr := d.Inputs.Mappable()["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	h2 := m.find("kubernetes:apps/v1:Deployment", "h2dial")
	h2ctr := h2.Inputs.Mappable()["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if ctr["image"] != h2ctr["image"] || ctr["imagePullPolicy"] != h2ctr["imagePullPolicy"] {
		t.Errorf("grpcbin runs %v (%v), the h2dial pod %v (%v): want the one lab image", ctr["image"], ctr["imagePullPolicy"], h2ctr["image"], h2ctr["imagePullPolicy"])
	}
	if got := strings.Join(toStrings(ctr["command"]), " ") + " " + strings.Join(toStrings(ctr["args"]), " "); got != "/igwlab-grpc serve -addr :9000" {
		t.Errorf("grpcbin runs %q", got)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestImageRepo(t *testing.T) {
	for in, want := range map[string]string{
		"fortio/fortio:1.75.3":              "fortio/fortio",
		"registry:5000/igwlab/h2dial:abc":   "registry:5000/igwlab/h2dial",
		"moul/grpcbin@sha256:bd8f":          "moul/grpcbin",
		"registry:5000/igwlab/h2dial":       "registry:5000/igwlab/h2dial",
		"ghcr.io/mccutchen/go-httpbin:2.26": "ghcr.io/mccutchen/go-httpbin",
	} {
		if got := imageRepo(in); got != want {
			t.Errorf("imageRepo(%q) = %q, want %q", in, got, want)
		}
	}
}
