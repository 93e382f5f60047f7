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
	// Codec is the downstream HTTP/2 library it runs by default (the runtime guard
	// envoy.reloadable_features.http2_use_oghttp2, which Istio leaves as Envoy sets it).
	Codec string
	// Source is where the release's defaults are documented.
	Source string
}

// The HTTP/2 codecs (EnvoyRelease.Codec).
const (
	CodecOghttp2 = "oghttp2"
	CodecNghttp2 = "nghttp2"
)

// DefaultEnvoy is the release the lab's Istio (1.27) ships.
const DefaultEnvoy = "1.35"

// GatewayMemoryLimit is the gateway container's memory limit, in bytes: the Istio gateway
// chart's default (manifests/charts/gateway/values.yaml resources.limits.memory, 1024Mi), which
// the lab's gateway keeps and the local target's pods are held to.
const GatewayMemoryLimit = 1 << 30

// EnvoyReleases are the releases the lab models, oldest first. Envoy 1.36 made the HTTP/2
// defaults "safe" (runtime guard envoy.reloadable_features.safe_http2_options): a stream cap of
// 1024 instead of 2^31-1, and 16 MiB / 24 MiB windows instead of 256 MiB.
//
// Envoy 1.37 returned the default codec to nghttp2 (envoyproxy/envoy#42319, "due to
// regressions"; the 1.36 backport, #46233, was refused), so Istio 1.29 and later run nghttp2;
// 1.35 and 1.36 run oghttp2 (changelogs/1.34.0.yaml, #38026). The HTTP/2 defaults have not
// moved since 1.36: protocol.proto's Http2ProtocolOptions documents 1024 streams and 16 MiB /
// 24 MiB windows through 1.39 (go-control-plane envoy v1.37.0 and a v1.39 main snapshot). The
// Istio minor shipping each Envoy is istio/test-infra's proxy job for that branch
// (prow/.../proxy-1.NN.yaml, UPDATE_BRANCH=release/v1.NN).
var EnvoyReleases = []EnvoyRelease{
	{Envoy: "1.35", Istio: "1.27", Defaults: envoyDefaults135, Codec: CodecOghttp2,
		Source: "https://github.com/envoyproxy/envoy/blob/v1.35.0/api/envoy/config/core/v3/protocol.proto"},
	{Envoy: "1.36", Istio: "1.28", Defaults: envoyDefaults136, Codec: CodecOghttp2,
		Source: "https://github.com/envoyproxy/envoy/blob/v1.36.0/changelogs/1.36.0.yaml (envoyproxy/envoy#40716; istio/istio#57968)"},
	{Envoy: "1.37", Istio: "1.29", Defaults: envoyDefaults136, Codec: CodecNghttp2,
		Source: "https://github.com/envoyproxy/envoy/pull/42319 (nghttp2 the default again); api/envoy/config/core/v3/protocol.proto (defaults as 1.36)"},
	{Envoy: "1.38", Istio: "1.30", Defaults: envoyDefaults136, Codec: CodecNghttp2,
		Source: "https://github.com/envoyproxy/envoy/blob/v1.38.0/api/envoy/config/core/v3/protocol.proto"},
	{Envoy: "1.39", Istio: "1.31", Defaults: envoyDefaults136, Codec: CodecNghttp2,
		Source: "https://github.com/envoyproxy/envoy/blob/v1.39.0/api/envoy/config/core/v3/protocol.proto"},
}

var (
	envoyDefaults135 = map[string]string{
		"hcm.http2_protocol_options.max_concurrent_streams":         "2147483647",
		"hcm.http2_protocol_options.initial_stream_window_size":     "268435456",
		"hcm.http2_protocol_options.initial_connection_window_size": "268435456",
	}
	// envoyDefaults136 are the "safe" HTTP/2 defaults (runtime guard
	// envoy.reloadable_features.safe_http2_options), 1.36 and later.
	envoyDefaults136 = map[string]string{
		"hcm.http2_protocol_options.max_concurrent_streams":         "1024",
		"hcm.http2_protocol_options.initial_stream_window_size":     "16777216",
		"hcm.http2_protocol_options.initial_connection_window_size": "25165824",
	}
)

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
