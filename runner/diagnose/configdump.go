package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// InForce is the rotation and caps the gateway's listener runs with, from /config_dump: the
// first pod read's, every knob with its default where the dump leaves it out, and where the
// pods disagree.
type InForce struct {
	MaxConcurrentStreams     uint32        `json:"max_concurrent_streams,omitempty"`
	MaxRequestsPerConnection uint32        `json:"max_requests_per_connection,omitempty"`
	MaxConnectionDuration    time.Duration `json:"max_connection_duration_ns,omitempty"`
	MaxStreamDuration        time.Duration `json:"max_stream_duration_ns,omitempty"`
	ExactBalance             bool          `json:"exact_balance,omitempty"`
	Pods                     int           `json:"pods_read"`
	// Envoy is the version the first pod's bootstrap reports, DefaultsOf the modelled release
	// whose defaults the knobs it leaves out take.
	Envoy      string `json:"envoy,omitempty"`
	DefaultsOf string `json:"defaults_of"`
	// Knobs are every knob in force on the first pod read.
	Knobs []stats.KnobInForce `json:"knobs"`
	// Disagree names each knob (or the Envoy version) the pods do not all run the same way.
	Disagree []string `json:"disagree,omitempty"`
}

// podConfig is one pod's /config_dump, read.
type podConfig struct {
	pod string
	c   stats.ConfigInForce
}

// inForce reads the rotation and caps from the pods' dumps: the first pod's, and where the
// others differ from it.
func inForce(pods []podConfig) (*InForce, error) {
	if len(pods) == 0 {
		return nil, nil
	}
	first := pods[0].c
	f := &InForce{Pods: len(pods), Envoy: first.Envoy, DefaultsOf: first.Release.Envoy, Knobs: first.Knobs}
	for _, kv := range []struct {
		path string
		dst  any
	}{
		{"hcm.http2_protocol_options.max_concurrent_streams", &f.MaxConcurrentStreams},
		{"hcm.common_http_protocol_options.max_requests_per_connection", &f.MaxRequestsPerConnection},
		{"hcm.common_http_protocol_options.max_connection_duration", &f.MaxConnectionDuration},
		{"hcm.common_http_protocol_options.max_stream_duration", &f.MaxStreamDuration},
		{"listener.connection_balance_config.exact_balance", &f.ExactBalance},
	} {
		spec, _ := stacks.Lookup(kv.path)
		if err := spec.Load(&first.Set, kv.dst); err != nil {
			return nil, err
		}
	}
	f.Disagree = disagreements(pods)
	return f, nil
}

// disagreements lists, knob by knob, the pods that run it differently, and differing Envoy
// versions: pods of one gateway get one config, so a difference is a pod that missed an
// update (or a rollout half done).
func disagreements(pods []podConfig) []string {
	var out []string
	show := func(what string, value func(podConfig) string) {
		var parts []string
		seen := map[string]bool{}
		for _, p := range pods {
			v := value(p)
			seen[v] = true
			parts = append(parts, p.pod+" "+v)
		}
		if len(seen) > 1 {
			out = append(out, what+": "+strings.Join(parts, ", "))
		}
	}
	show("Envoy", func(p podConfig) string { return or(p.c.Envoy, "unknown") })
	for _, spec := range stacks.Registry {
		show(spec.Path, func(p podConfig) string {
			k := p.c.Knob(spec.Path)
			if !k.Set {
				return k.Value + " (default)"
			}
			return k.Value
		})
	}
	return out
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// inForceText says what the pods run: the knobs their dumps set, and that the rest are at the
// defaults of their Envoy release.
func inForceText(f *InForce) string {
	var set []string
	for _, k := range f.Knobs {
		if k.Set {
			set = append(set, k.Path+" "+k.Value)
		}
	}
	envoy := "Envoy " + or(f.Envoy, "of unknown version (the dump has no bootstrap)")
	defaults := fmt.Sprintf("the defaults of Envoy %s as the lab models them", f.DefaultsOf)
	if f.Envoy != "" && !strings.HasPrefix(f.Envoy, f.DefaultsOf+".") {
		defaults = fmt.Sprintf("Envoy %s's defaults, which are %s's for these knobs", f.Envoy, f.DefaultsOf)
	}
	mcs := slices.IndexFunc(f.Knobs, func(k stats.KnobInForce) bool { return k.Path == "hcm.http2_protocol_options.max_concurrent_streams" })
	cap := ""
	if mcs >= 0 {
		cap = fmt.Sprintf(" (max_concurrent_streams %s)", f.Knobs[mcs].Value)
	}
	if len(set) == 0 {
		return fmt.Sprintf("%d pod(s) read, %s: no knob set, every one at %s%s", f.Pods, envoy, defaults, cap)
	}
	return fmt.Sprintf("%d pod(s) read, %s: sets %s; the rest at %s%s", f.Pods, envoy, strings.Join(set, ", "), defaults, cap)
}
