package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// StreamsAxis is the name a sweep of the client's streams goes by, in place of a knob path:
// the scenario's h2dial client.concurrency, its streams in flight on one shared transport.
const StreamsAxis = "client.concurrency"

// Streams bounds: h2dial's own range of workers.
const (
	minStreams = 1
	maxStreams = 100000
)

// ParseStreams reads --client-streams: a,b,c or the log range lo..hixF, each a stream count in
// h2dial's range, none twice.
func ParseStreams(text string) ([]string, error) {
	allowed := fmt.Sprintf("%d..%d streams (h2dial's workers)", minStreams, maxStreams)
	raw, err := stacks.ListValues(StreamsAxis, text, true, allowed)
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %q is not a whole number of streams: allowed %s", StreamsAxis, v, allowed)
		case n < minStreams || n > maxStreams:
			return nil, fmt.Errorf("%s: %d is out of range: allowed %s", StreamsAxis, n, allowed)
		case seen[n]:
			return nil, fmt.Errorf("%s: value %d is listed twice", StreamsAxis, n)
		}
		seen[n] = true
		out = append(out, strconv.Itoa(n))
	}
	return out, nil
}

// CheckStreams says whether sc's client is one whose streams a sweep can vary: one that dials
// a new connection only at the gateway's stream cap (stacks.Client.DialsAtCap).
func CheckStreams(sc *stacks.Scenario) error {
	if !sc.Client.DialsAtCap() {
		return fmt.Errorf("%s's client is %s (mode %q): a sweep of the client's streams takes a scenario whose client is %s, e.g. 02-trigger",
			sc.Name, sc.Client.Kind, sc.Client.Mode, stacks.DialsAtCapClients())
	}
	return nil
}

// withStreams is the scenario with its client's streams set to v on every target.
func withStreams(sc *stacks.Scenario, v string) *stacks.Scenario {
	out := sc.Lab()
	out.Client.Concurrency, _ = strconv.Atoi(v)
	out.Local.Client.Concurrency = 0
	return &out
}

// Spread is what a sweep of a client's streams finds: where it starts to spread.
type Spread struct {
	// Cap is the gateway's max_concurrent_streams in force, and where it came from.
	Cap       uint32 `json:"max_concurrent_streams"`
	CapSource string `json:"max_concurrent_streams_source"`
	// At is the fewest streams at which the client held more than one connection ("": none).
	At   string `json:"first_spread_at,omitempty"`
	Text string `json:"text"`
}

// spreadOf reads the sweep's points against the stream cap in force (eff: the first value's
// scenario as the target runs it): x/net's Transport opens a connection only when every one
// it holds is at the cap the server advertised, so S streams need at least ceil(S/cap).
func spreadOf(sw *Sweep, o Options, eff *stacks.Scenario, envoy string) *Spread {
	sp := &Spread{}
	mcs := func(k stacks.Knobs) *uint32 {
		if h := k.HCM.HTTP2; h != nil {
			return h.MaxConcurrentStreams
		}
		return nil
	}
	rel, err := stacks.LookupEnvoy(envoy)
	if err != nil {
		rel, _ = stacks.LookupEnvoy(stacks.DefaultEnvoy)
	}
	switch {
	case mcs(o.Set) != nil:
		sp.CapSource = "held by --set"
	case mcs(o.Scenario.Knobs) != nil || mcs(o.Scenario.Local.Knobs) != nil:
		sp.CapSource = "set by " + o.Scenario.Name
	default:
		sp.CapSource = fmt.Sprintf("Envoy %s's default, Istio %s's", rel.Envoy, rel.Istio)
	}
	if v := mcs(eff.Knobs); v != nil {
		sp.Cap = *v
	} else {
		v, _ := strconv.ParseUint(rel.Defaults["hcm.http2_protocol_options.max_concurrent_streams"], 10, 32)
		sp.Cap = uint32(v)
	}
	var each []string
	for _, p := range sw.Points {
		if p.Status != analysis.StatusOK {
			continue
		}
		n, _ := strconv.ParseFloat(p.Value, 64)
		want := math.Ceil(n / float64(sp.Cap))
		s := fmt.Sprintf("%s streams: %.0f connection(s), at least %.0f", p.Value, p.Connections, want)
		if p.Connections > 1 && p.Chance != nil {
			s += fmt.Sprintf(", CV %.3f (%s)", p.CV, p.ChanceVerdict)
		}
		each = append(each, s)
		if p.Connections > 1 && sp.At == "" {
			sp.At = p.Value
		}
	}
	head := fmt.Sprintf("With max_concurrent_streams %d in force (%s), a client on one shared transport opens another connection only when its streams pass the cap, so S streams need at least ceil(S/%d) connections (x/net's Transport opens more when requests arrive while a new connection has not yet heard the cap)", sp.Cap, sp.CapSource, sp.Cap)
	switch {
	case len(each) == 0:
		sp.Text = head + "; no value finished"
	case sp.At == "":
		sp.Text = head + "; it held one connection at every value tried (" + strings.Join(each, "; ") + "): all of its load stays on one worker of one pod"
	default:
		sp.Text = head + "; it starts to spread at " + sp.At + " streams (" + strings.Join(each, "; ") + ")"
	}
	return sp
}
