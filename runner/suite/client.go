package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/runner/measure"
	"github.com/igwlab/igwlab/stacks"
)

// The scenario's client: its load spec from the catalog, running it (on a virtual target's
// clock where there is one), and what the analysis reads of its result.

// runLoad runs the scenario's client, with hooks on a virtual target's clock. A client that panics (an in-process one on the local
// target) is turned into an error with its stack kept in the folder: the crash is reported as
// the scenario's failure and the suite goes on.
func (r *run) runLoad(ctx context.Context, spec load.Spec, dir string, hooks []gateway.Hook) (res *load.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			crash := fmt.Sprintf("the %s client panicked: %v\n\n%s", spec.Kind, v, debug.Stack())
			_ = measure.WriteFile(filepath.Join(dir, "client-crash.txt"), []byte(crash))
			res, err = nil, fmt.Errorf("the %s client crashed: %v (its stack is in client-crash.txt)", spec.Kind, v)
		}
	}()
	if v, ok := r.virtual(); ok {
		return v.LoadTimed(ctx, spec, hooks)
	}
	return r.o.Target.Load(ctx, spec)
}

func (r *run) loadSpec(sc stacks.Scenario) (load.Spec, error) {
	c := sc.Client
	spec := load.Spec{Kind: c.Kind, Mode: c.Mode, Concurrency: c.Concurrency, Connections: c.Connections,
		Path: c.Path, QPS: c.QPS, BodyBytes: c.BodyBytes, Duration: sc.Load.Duration.D(), Authority: c.Authority, Headers: map[string]string{},
		Rate: c.MessageRate, MessageBytes: c.MessageBytes, LB: c.LB, LongStream: c.LongStream}
	if c.Slow != nil {
		spec.SlowPath, spec.SlowWorkers = c.Slow.Path, c.Slow.Workers
	}
	if sc.EastWest != nil {
		spec.ClientPods = sc.EastWest.Clients
	}
	for k, v := range c.Headers {
		if strings.Contains(v, "${JWT}") {
			issuer := "igwlab.local"
			if sc.Filters.JWT != nil {
				issuer = sc.Filters.JWT.Issuer
			}
			tok, err := r.o.Target.Token(issuer)
			if err != nil {
				return spec, fmt.Errorf("minting the JWT for header %s: %w", k, err)
			}
			v = strings.ReplaceAll(v, "${JWT}", tok)
		}
		spec.Headers[k] = v
	}
	return spec, nil
}

// clientInput is what the analysis needs of the client's result.
func clientInput(r *load.Result) *analysis.Client {
	if r == nil {
		return nil
	}
	c := &analysis.Client{RPS: r.RPS, Requests: r.Requests, Errors: r.Errors, P50: r.Latency.P50, P90: r.Latency.P90,
		P99: r.Latency.P99, P999: r.Latency.P999, Connections: r.ConnectionsOpened,
		OfferedRPS: r.OfferedRPS, Unsent: r.Unsent, SendLagP99: r.SendLagP99,
		StreamsOpened: r.StreamsOpened, StreamEnds: r.StreamEnds, Conns: r.Conns}
	if r.Slow != nil {
		c.SlowP99 = r.Slow.Latency.P99
	}
	return c
}

func clientText(c stacks.Client) string {
	s := fmt.Sprintf("%s c=%d", c.Kind, c.Concurrency)
	if c.Mode != "" {
		s += " mode=" + c.Mode
	}
	if c.QPS > 0 {
		s += fmt.Sprintf(" qps=%g", c.QPS)
	}
	if c.MessageRate > 0 {
		s += fmt.Sprintf(" %g msg/s per stream", c.MessageRate)
	}
	if c.LB != "" && c.LB != "pick_first" {
		s += " lb=" + c.LB
	}
	if c.Connections > 1 {
		s += fmt.Sprintf(" connections=%d", c.Connections)
	}
	if c.LongStream {
		s += " long streams"
	}
	return s + " " + c.Path
}
