package diagnose

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// Lever is the server-side knob that fits what was seen, with the EnvoyFilter patch that sets
// it and the lab command that tries it first.
type Lever struct {
	Knob        string `json:"knob"`
	Value       string `json:"value"`
	Why         string `json:"why"`
	Cost        string `json:"cost,omitempty"`
	EnvoyFilter string `json:"envoyfilter"`
	// Envoy names the Envoy fields to set where the gateway is not Istio's, so no EnvoyFilter
	// reaches it.
	Envoy   string `json:"envoy,omitempty"`
	Preview string `json:"preview"`
}

const (
	knobMaxRequests    = "hcm.common_http_protocol_options.max_requests_per_connection"
	knobStreamDuration = "hcm.common_http_protocol_options.max_stream_duration"
	// streamLife is the max_stream_duration diagnose proposes for long-lived streams: a
	// watch or feed client opens the next stream at once, so a minute moves its load about as
	// often as the count rotation diagnose proposes moves a busy connection's, at a stream's
	// reconnect per minute.
	streamLife  = "60s"
	knobStreams = "hcm.http2_protocol_options.max_concurrent_streams"
	knobExact   = "listener.connection_balance_config.exact_balance"
)

func rotationText(f *InForce, r Rotation, period string) string {
	var parts []string
	if f != nil {
		if f.MaxRequestsPerConnection > 0 {
			parts = append(parts, fmt.Sprintf("max_requests_per_connection %d is set", f.MaxRequestsPerConnection))
		}
		if f.MaxConnectionDuration > 0 {
			parts = append(parts, fmt.Sprintf("max_connection_duration %s is set", f.MaxConnectionDuration))
		}
		if f.MaxConcurrentStreams > 0 && f.MaxConcurrentStreams < 2147483647 {
			parts = append(parts, fmt.Sprintf("max_concurrent_streams %d caps each connection", f.MaxConcurrentStreams))
		}
		if len(parts) == 0 {
			parts = append(parts, "/config_dump shows no rotation and no stream cap (Envoy's defaults)")
		}
	} else {
		parts = append(parts, "no /config_dump from this source: rotation judged from the drain counters alone")
	}
	switch {
	case r.MaxRequestsReached > 0:
		parts = append(parts, fmt.Sprintf("downstream_cx_max_requests_reached rose by %d %s (requests at or over the limit)", int(r.MaxRequestsReached), period))
	case r.MaxDurationReached > 0:
		parts = append(parts, fmt.Sprintf("downstream_cx_max_duration_reached rose by %d %s", int(r.MaxDurationReached), period))
	default:
		parts = append(parts, "no rotation counter moved "+period)
	}
	return strings.Join(parts, "; ")
}

// rotating says whether count or time rotation is in force, by config or by its counters.
func rotating(f *InForce, r Rotation) bool {
	return r.MaxRequestsReached > 0 || r.MaxDurationReached > 0 ||
		f != nil && (f.MaxRequestsPerConnection > 0 || f.MaxConnectionDuration > 0)
}

func busyText(w *Window, r *Report) []string {
	if len(w.CPUSeconds) == 0 {
		if r.Loop != "" && !strings.Contains(r.Loop, "dispatcher stats are off") {
			return []string{"busy workers: from each worker's own event loop (worker loop, below); container CPU per pod (container_cpu_usage_seconds_total from cAdvisor) was not available"}
		}
		return []string{"busy workers: not measured from this source (Envoy measures a worker's busy time only with dispatcher stats, the bootstrap's enable_dispatcher_stats, which this gateway does not export; container CPU per pod, container_cpu_usage_seconds_total from cAdvisor, was not available)"}
	}
	var out []string
	for _, p := range r.Pods {
		if p.CPUCores == 0 {
			continue
		}
		per := p.CPUCores / math.Max(1, float64(p.Workers))
		out = append(out, fmt.Sprintf("%s: %.2f cores for %d worker(s), %.0f%% of each on average", p.Name, p.CPUCores, p.Workers, 100*per))
	}
	return out
}

// clientText says what the clients probably do, from how their connections behave.
func clientText(r *Report, w *Window) string {
	var parts []string
	if r.StreamsPerConn >= 2 {
		parts = append(parts, fmt.Sprintf("multiplexing: %.1f requests in flight per open connection", r.StreamsPerConn))
	}
	if r.OlderThanWindow > 0 && r.ConnectionsOpened == 0 {
		parts = append(parts, fmt.Sprintf("long-lived: none of the %d open connection(s) was opened in the last %s", int(r.ConnectionsActive), w.Span.Round(time.Second)))
	} else if r.OlderThanWindow > 0 {
		parts = append(parts, fmt.Sprintf("%d open connection(s) are older than the %s window", int(r.OlderThanWindow), w.Span.Round(time.Second)))
	}
	if r.RequestsPerConn >= 100 {
		parts = append(parts, fmt.Sprintf("%.0f requests per connection", r.RequestsPerConn))
	}
	if f := w.InForce; f != nil && f.MaxConcurrentStreams > 0 && f.MaxConcurrentStreams < 2147483647 &&
		r.StreamsPerConn >= 0.9*float64(f.MaxConcurrentStreams) {
		if r.ConnectionsOpened > 0 {
			parts = append(parts, "at the stream cap and opening connections: it dials")
		} else {
			parts = append(parts, "at the stream cap without opening connections: it queues")
		}
	}
	if rotating(w.InForce, r.Rotation) && r.ConnectionsOpened > 0 {
		parts = append(parts, "it reconnects after a GOAWAY")
	}
	if len(parts) == 0 {
		return "nothing unusual: short-lived or lightly multiplexed connections"
	}
	s := strings.Join(parts, "; ")
	if r.StreamsPerConn >= 2 && r.Connections <= float64(3*len(r.Pods)) {
		s += ": the signature of a shared HTTP/2 transport or a gRPC ClientConn, which puts all its streams on one or a few connections"
	}
	return s
}

// chooseLever picks the knob that fits, or none.
func chooseLever(r *Report, w *Window, placedBeyond bool) *Lever {
	if l := streamsLever(r, w, placedBeyond); l != nil {
		return l
	}
	var l *Lever
	switch {
	case r.Verdict == AsChance:
		if hot := hotWorkers(r); hot != "" && !exact(w.InForce) {
			l = &Lever{Knob: knobExact, Value: "{}", Why: "pods are even but their workers are not (" + hot +
				"): exact_balance hands each new connection to the worker with the fewest; it cannot move work between pods"}
		}
	case placedBeyond:
		return &Lever{Why: "connections land on pods more unevenly than random placement would put them: look in front of the gateway (client affinity or source-IP hashing in the load balancer, pods missing from its endpoints); no gateway knob moves connections between pods"}
	case !rotating(w.InForce, r.Rotation):
		v := rotationValue(r)
		l = &Lever{Knob: knobMaxRequests, Value: strconv.Itoa(v),
			Why:  fmt.Sprintf("every client re-dials on GOAWAY, so count rotation re-places each connection about every %s (%.0f requests per second per connection); a stream cap would help only clients that dial, and %s", rotateEvery, r.RequestsPerConn/math.Max(1, r.SpanS), dialNote(r)),
			Cost: fmt.Sprintf("about %.1f reconnects per second across the pool, each a new TLS handshake on some worker when TLS terminates at the gateway", r.Requests/math.Max(1, r.SpanS)/float64(v))}
	default:
		l = &Lever{Why: fmt.Sprintf("rotation is already in force (%s) and %d connection(s) still cover at most %d pod(s) at a time: the clients need more connections (a pool of gRPC channels, more client replicas), or rotation must be faster", r.Rotation.Text, int(r.ConnectionsActive), int(r.ConnectionsActive))}
		if f := w.InForce; f != nil && f.MaxRequestsPerConnection > 0 {
			v := rotationValue(r)
			if uint64(v) < uint64(f.MaxRequestsPerConnection) {
				l.Knob, l.Value = knobMaxRequests, strconv.Itoa(v)
			}
		}
	}
	if l != nil && l.Knob != "" {
		setPatch(l, w, "gateway-rotation", map[string]string{l.Knob: l.Value}, "")
	}
	return l
}

func dialNote(r *Report) string {
	if r.StreamsPerConn >= 2 && r.ConnectionsOpened == 0 {
		return "these connections did not multiply, so they probably queue"
	}
	return "a dialing client cannot be told from a queueing one without a cap to hit"
}

// rotationValue is a max_requests_per_connection that rotates each connection about every
// rotateEvery, rounded to 1, 2 or 5 times a power of ten, and at least 100.
func rotationValue(r *Report) int {
	perConn := r.RequestsPerConn / math.Max(1, r.SpanS) // requests per second per connection
	v := math.Max(100, perConn*rotateEvery.Seconds())
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*1.5 {
			return int(m * p)
		}
	}
	return int(10 * p)
}

func hotWorkers(r *Report) string {
	var hot []string
	for _, p := range r.Pods {
		if p.Workers >= 2 && p.WorkerCV >= concentratedCV {
			hot = append(hot, fmt.Sprintf("%s worker CV %.2f", p.Name, p.WorkerCV))
		}
	}
	return strings.Join(hot, ", ")
}

func exact(f *InForce) bool { return f != nil && f.ExactBalance }

// setPatch gives the lever the EnvoyFilter that sets its knobs on an Istio gateway whose
// listener binds the port the stats name, or on another Envoy-based gateway the Envoy fields
// to set through its own config; and the command that tries them in the lab first.
func setPatch(l *Lever, w *Window, name string, set map[string]string, scenario string) {
	if w.Tier == TierWaypoint {
		// A waypoint's knobs: a filter naming its Gateway, tried in the lab on the east-west
		// scenario of the same shape.
		l.EnvoyFilter, l.Preview = PatchWaypointKnobs(name, "diagnose", set)
		return
	}
	l.EnvoyFilter, l.Preview = PatchKnobs(name, "diagnose", set, w.Names.Listener, scenario)
	if strings.HasPrefix(w.Names.HCMPrefix, "outbound_") {
		return // Istio names its gateway's connection managers outbound_<address>_<port>
	}
	l.EnvoyFilter = ""
	var fields []string
	for _, path := range slices.Sorted(maps.Keys(set)) {
		what, field, _ := strings.Cut(path, ".")
		owner := "the listener's"
		if what == "hcm" {
			owner = "its HTTP connection manager's"
		}
		fields = append(fields, fmt.Sprintf("%s %s: %s", owner, field, set[path]))
	}
	hcm := fmt.Sprintf("its connection manager is %q, not Istio's outbound_<address>_<port>", w.Names.HCMPrefix)
	if w.Names.HCMPrefix == "" {
		hcm = "its listener has no HTTP connection manager"
	}
	l.Envoy = fmt.Sprintf("not an Istio gateway (%s), so an EnvoyFilter does not reach it: on listener %s set %s through the gateway's own configuration (Envoy Gateway: an EnvoyPatchPolicy; a static Envoy: its bootstrap)",
		hcm, w.Names.Listener, strings.Join(fields, ", "))
}

// Patch renders an EnvoyFilter named name that sets one knob on a gateway whose listener is
// listener (its stats' listener_address, e.g. 0.0.0.0_80: the port it binds), labelled with
// the command that recommends it (origin: diagnose, sweep), and the `igwlab preview` line
// that tries it in the lab first (on scenario, when not ""). Both are "" for a knob or value
// the registry refuses.
func Patch(name, origin, path, value, listener, scenario string) (string, string) {
	return PatchKnobs(name, origin, map[string]string{path: value}, listener, scenario)
}

// PatchKnobs is Patch for several knobs at once, set by path.
func PatchKnobs(name, origin string, set map[string]string, listener, scenario string) (string, string) {
	k, paths, ok := knobsOf(set)
	if !ok {
		return "", ""
	}
	t := envoyfilter.DefaultTarget
	if i := strings.LastIndexByte(listener, '_'); i >= 0 { // 0.0.0.0_80, [__]_8080
		if p, err := strconv.Atoi(listener[i+1:]); err == nil {
			t.Port = p
		}
	}
	obj := envoyfilter.Object(name, stacks.Scenario{Name: origin, Knobs: k}, t)
	b, err := yaml.Marshal(obj)
	if err != nil {
		return "", ""
	}
	note := fmt.Sprintf("# namespace and workloadSelector are the lab gateway's (istio-ingress, istio: ingressgateway): use your gateway's.\n# portNumber %d is the port its listener binds, from the listener in its stats (%s).\n", t.Port, listener)
	preview := "igwlab preview"
	if scenario != "" {
		preview += " --scenario " + scenario
	}
	return note + string(b), preview + setFlags(paths, set)
}

// knobsOf reads knobs set by path, with their paths sorted; false for a knob or value the
// registry refuses.
func knobsOf(set map[string]string) (stacks.Knobs, []string, bool) {
	var k stacks.Knobs
	paths := make([]string, 0, len(set))
	for path, value := range set {
		spec, ok := stacks.Lookup(path)
		if !ok || spec.Set(&k, value) != nil {
			return k, nil, false
		}
		paths = append(paths, path)
	}
	sort.Strings(paths)
	return k, paths, true
}

// setFlags is the --set flags of igwlab preview for knobs.
func setFlags(paths []string, set map[string]string) string {
	var b strings.Builder
	for _, path := range paths {
		b.WriteString(" --set " + path + "=" + set[path])
	}
	return b.String()
}

// PatchWaypointKnobs renders the EnvoyFilter that sets knobs on an ambient waypoint (by
// targetRefs to its Gateway: envoyfilter.WaypointObject), and the `igwlab preview` line that
// tries them on the lab's east-west scenario. Both are "" for a knob or value the registry
// refuses.
func PatchWaypointKnobs(name, origin string, set map[string]string) (string, string) {
	k, paths, ok := knobsOf(set)
	if !ok {
		return "", ""
	}
	t := envoyfilter.DefaultWaypoint
	obj := envoyfilter.WaypointObject(name, stacks.Scenario{Name: origin, Knobs: k, EastWest: &stacks.EastWest{}}, t)
	b, err := yaml.Marshal(obj)
	if err != nil {
		return "", ""
	}
	note := fmt.Sprintf("# namespace and targetRefs are the lab waypoint's (%s, Gateway %s): use your waypoint's namespace and Gateway.\n", t.Namespace, t.Gateway)
	return note + string(b), "igwlab preview --scenario 22-ew-pinned" + setFlags(paths, set)
}

// streamsLever is max_stream_duration for concentrated long-lived streams that rotation
// cannot move, with count rotation beside it when none is in force: ending a stream moves it
// only when its connection drains.
func streamsLever(r *Report, w *Window, placedBeyond bool) *Lever {
	m := r.Streams
	if m == nil || !m.LongLived || placedBeyond || r.Verdict == AsChance || r.Verdict == NotEnoughData {
		return nil
	}
	if f := w.InForce; f != nil && f.MaxStreamDuration > 0 || m.Ended > 0 {
		return &Lever{Why: fmt.Sprintf("the streams are long-lived (%s) and max_stream_duration already ends them: make it shorter, and keep rotation in force so their successors move", m.Text)}
	}
	set := map[string]string{knobStreamDuration: streamLife}
	why := fmt.Sprintf("the streams are long-lived (%s): rotation alone drains their connections and they stay open under the streams; "+
		"max_stream_duration %s ends each stream after a minute (a reset once its response has started: gRPC clients see INTERNAL and open the next)", m.Text, streamLife)
	if !rotating(w.InForce, r.Rotation) {
		v := strconv.Itoa(rotationValue(r))
		set[knobMaxRequests] = v
		why += fmt.Sprintf(", and max_requests_per_connection %s drains their connections, so the next streams land on new ones", v)
	} else {
		why += "; the rotation in force then moves their successors to new connections"
	}
	l := &Lever{Knob: knobStreamDuration, Value: streamLife, Why: why,
		Cost: "every stream reopened once a minute: a new request through the filter chain, and a gap the client's retry covers"}
	setPatch(l, w, "gateway-streams", set, "19-streams-duration")
	return l
}
