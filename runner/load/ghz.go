package load

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/igwlab/igwlab/h2dial"
)

// GHZReport is the part of ghz's JSON report (-O json) the lab reads.
type GHZReport struct {
	Count               int64            `json:"count"`
	Total               time.Duration    `json:"total"`
	Average             time.Duration    `json:"average"`
	Fastest             time.Duration    `json:"fastest"`
	Slowest             time.Duration    `json:"slowest"`
	RPS                 float64          `json:"rps"`
	ErrorDist           map[string]int64 `json:"errorDistribution"`
	StatusCodeDist      map[string]int64 `json:"statusCodeDistribution"`
	LatencyDistribution []struct {
		Percentage float64       `json:"percentage"`
		Latency    time.Duration `json:"latency"`
	} `json:"latencyDistribution"`
	Options struct {
		Connections int `json:"connections"`
		Concurrency int `json:"concurrency"`
	} `json:"options"`
}

// GHZArgs is ghz's command line for a spec (the lab's scenario 12 invocation).
func GHZArgs(s Spec, target string) []string {
	args := []string{"--insecure", fmt.Sprintf("--concurrency=%d", s.Concurrency),
		fmt.Sprintf("--connections=%d", max(1, s.Connections)), fmt.Sprintf("--duration=%s", s.Duration),
		"--call=grpcbin.GRPCBin/DummyUnary", "--data={}", "--format=json"}
	if s.Authority != "" {
		args = append(args, "--authority="+s.Authority)
	}
	return append(args, target)
}

// FromGHZ reads ghz's JSON report as a Result.
func FromGHZ(raw []byte) (*Result, error) {
	var g GHZReport
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("reading ghz's report: %w", err)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r := &Result{Client: "grpc", Requests: g.Count, RPS: g.RPS, ConnectionsOpened: max(1, g.Options.Connections), Native: g,
		Latency: h2dial.Latency{Count: uint64(g.Count), Min: ms(g.Fastest), Mean: ms(g.Average), Max: ms(g.Slowest)}}
	for code, n := range g.StatusCodeDist {
		if code != "OK" {
			r.Errors += n
		}
	}
	for _, l := range g.LatencyDistribution {
		switch l.Percentage {
		case 50:
			r.Latency.P50 = ms(l.Latency)
		case 75:
			r.Latency.P75 = ms(l.Latency)
		case 90:
			r.Latency.P90 = ms(l.Latency)
		case 99:
			r.Latency.P99 = ms(l.Latency)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ghz summary\ncount: %d  rps: %.1f  errors: %d\naverage %s fastest %s slowest %s p99 %.2fms\n",
		g.Count, g.RPS, r.Errors, g.Average, g.Fastest, g.Slowest, r.Latency.P99)
	r.Text = b.String()
	return r, nil
}
