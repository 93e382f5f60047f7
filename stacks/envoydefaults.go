package stacks

import (
	"fmt"
	"strings"
)

// EnvoyRelease is one Envoy minor release as the gateway inherits it: the defaults it runs with
// for the knobs a scenario leaves unset, where they differ from release to release.
type EnvoyRelease struct {
	// Envoy is the Envoy minor version ("1.35"); Istio is the first Istio minor that ships it.
	Envoy, Istio string
	// Defaults are the knobs' defaults in this release, by knob path, as the knob is written.
	Defaults map[string]string
	// Source is where the release's defaults are documented.
	Source string
}

// DefaultEnvoy is the release the lab's Istio (1.27) ships.
const DefaultEnvoy = "1.35"

// GatewayMemoryLimit is the gateway container's memory limit, in bytes: the Istio gateway
// chart's default (manifests/charts/gateway/values.yaml resources.limits.memory, 1024Mi), which
// the lab's gateway keeps and the local target's pods are held to.
const GatewayMemoryLimit = 1 << 30

// EnvoyReleases are the releases the lab models, oldest first. Envoy 1.36 made the HTTP/2
// defaults "safe" (runtime guard envoy.reloadable_features.safe_http2_options): a stream cap of
// 1024 instead of 2^31-1, and 16 MiB / 24 MiB windows instead of 256 MiB.
var EnvoyReleases = []EnvoyRelease{
	{Envoy: "1.35", Istio: "1.27", Defaults: map[string]string{
		"hcm.http2_protocol_options.max_concurrent_streams":         "2147483647",
		"hcm.http2_protocol_options.initial_stream_window_size":     "268435456",
		"hcm.http2_protocol_options.initial_connection_window_size": "268435456",
	}, Source: "https://github.com/envoyproxy/envoy/blob/v1.35.0/api/envoy/config/core/v3/protocol.proto"},
	{Envoy: "1.36", Istio: "1.28", Defaults: map[string]string{
		"hcm.http2_protocol_options.max_concurrent_streams":         "1024",
		"hcm.http2_protocol_options.initial_stream_window_size":     "16777216",
		"hcm.http2_protocol_options.initial_connection_window_size": "25165824",
	}, Source: "https://github.com/envoyproxy/envoy/blob/v1.36.0/changelogs/1.36.0.yaml (envoyproxy/envoy#40716; istio/istio#57968)"},
}

// LookupEnvoy returns the release named version ("1.35", "1.36").
func LookupEnvoy(version string) (EnvoyRelease, error) {
	var names []string
	for _, r := range EnvoyReleases {
		if r.Envoy == version {
			return r, nil
		}
		names = append(names, fmt.Sprintf("%s (Istio %s)", r.Envoy, r.Istio))
	}
	return EnvoyRelease{}, fmt.Errorf("Envoy %q: allowed %s", version, strings.Join(names, ", "))
}

// EnvoyForIstio is the release an Istio version ("1.27.9") ships: the newest release whose
// first Istio minor is at or below it, and the oldest for an older Istio.
func EnvoyForIstio(istio string) EnvoyRelease {
	minor := minorOf(istio)
	out := EnvoyReleases[0]
	for _, r := range EnvoyReleases {
		if minorOf(r.Istio) <= minor {
			out = r
		}
	}
	return out
}

// ReleaseFor is the modelled release whose defaults an Envoy version ("1.28.8", "1.36") runs
// with: the newest modelled release at or below it. An Envoy older than every modelled release
// takes the oldest's: the HTTP/2 defaults the releases model held unchanged until 1.36 changed
// them (protocol.proto documents 2147483647 streams and 256 MiB windows through 1.35). An
// empty or unreadable version takes the lab's own release.
func ReleaseFor(envoy string) EnvoyRelease {
	lab, _ := LookupEnvoy(DefaultEnvoy)
	if minorOf(envoy) == 0 {
		return lab
	}
	out := EnvoyReleases[0]
	for _, r := range EnvoyReleases {
		if minorOf(r.Envoy) <= minorOf(envoy) {
			out = r
		}
	}
	return out
}

// minorOf is the minor number of "1.N" or "1.N.P" (0 when there is none).
func minorOf(v string) int {
	var major, minor int
	_, _ = fmt.Sscanf(v, "%d.%d", &major, &minor)
	return minor
}

// envoyDefault is the lab's release's default of a knob, for the registry.
func envoyDefault(path string) string {
	r, _ := LookupEnvoy(DefaultEnvoy)
	return r.Defaults[path]
}

// WithDefaults returns k with every knob it leaves unset that the release has a default for
// set to that default: the knobs in force on a gateway of that release. A knob k sets wins.
func (k Knobs) WithDefaults(r EnvoyRelease) Knobs {
	out := k.Clone()
	for _, s := range Registry {
		if v, ok := r.Defaults[s.Path]; ok {
			if _, set := s.Get(&out); !set {
				_ = s.Set(&out, v) // in range: TestEnvoyReleases
			}
		}
	}
	return out
}
