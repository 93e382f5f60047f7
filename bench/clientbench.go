package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
)

// startServer starts the reference server as its own process, so its CPU is not the client's.
func startServer(ctx context.Context, self string) (addr string, stop func(), err error) {
	cmd := exec.CommandContext(ctx, self, "_server")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", nil, fmt.Errorf("reference server: %w", err)
	}
	return strings.TrimSpace(line), func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}, nil
}

// clientBench runs h2dial, fortio and h2load in turn, rounds times per layout, against one
// reference server.
func clientBench(ctx context.Context, o Options, progress io.Writer) (*ClientResult, error) {
	res := &ClientResult{}
	for _, l := range []struct {
		name, what string
		s          clientSpec
	}{
		{"multiplexed", fmt.Sprintf("%d streams in flight on 1 connection, the layout of the lab's trigger scenario (h2dial -mode shared -c %d, h2load -c 1 -m %d; fortio cannot multiplex and opens %d connections)", o.Streams, o.Streams, o.Streams, o.Streams),
			clientSpec{streams: o.Streams, conns: 1, duration: o.ClientDuration}},
		{"per-connection", fmt.Sprintf("%d connections x 1 stream (h2dial -mode distinct -c %d, h2load -c %d -m 1, fortio -c %d)", o.Conns, o.Conns, o.Conns, o.Conns),
			clientSpec{streams: o.Conns, conns: o.Conns, duration: o.ClientDuration}},
	} {
		lr, err := layoutBench(ctx, o, l.s, progress, l.name)
		if err != nil {
			return nil, err
		}
		lr.Layout = l.what + fmt.Sprintf(", closed loop, %s per run, each client at its defaults (h2load one thread); reference server: x/net/http2, started afresh for every run, small JSON body", o.ClientDuration)
		res.Layouts = append(res.Layouts, lr)
	}
	return res, nil
}

func layoutBench(ctx context.Context, o Options, s clientSpec, progress io.Writer, name string) (*LayoutResult, error) {
	res := &LayoutResult{Name: name, Rounds: map[string][]ClientRun{}, Median: map[string]ClientRun{}, Ratios: map[string]RatioSummary{}}
	clients := []struct {
		name string
		run  func() (ClientRun, error)
	}{
		{"h2dial", func() (ClientRun, error) { return runH2dial(ctx, o.H2dial, s) }},
		{"fortio", func() (ClientRun, error) { return runFortioChild(ctx, o.Self, s) }},
		{"h2load", func() (ClientRun, error) { return runH2load(ctx, o.H2load, s) }},
	}
	for round := 0; round < o.Rounds; round++ {
		for _, c := range clients {
			fmt.Fprintf(progress, "clients, %s: round %d/%d: %s\n", name, round+1, o.Rounds, c.name)
			// A fresh server each time: one that has just served another client's hundreds of
			// connections is slower, and a slower server makes any client spend more CPU per
			// request (fewer responses arrive per read).
			addr, stop, err := startServer(ctx, o.Self)
			if err != nil {
				return nil, err
			}
			s.url = "http://" + addr + "/"
			r, err := c.run()
			stop()
			if err != nil {
				return nil, err
			}
			res.Rounds[c.name] = append(res.Rounds[c.name], r)
		}
	}
	for name, runs := range res.Rounds {
		res.Median[name] = ClientRun{
			Requests: int64(median(runs, func(r ClientRun) float64 { return float64(r.Requests) })),
			CPUS:     median(runs, func(r ClientRun) float64 { return r.CPUS }),
			WallS:    median(runs, func(r ClientRun) float64 { return r.WallS }),
			RPS:      median(runs, func(r ClientRun) float64 { return r.RPS }),
			PerCPUS:  median(runs, func(r ClientRun) float64 { return r.PerCPUS }),
			P50Ms:    median(runs, func(r ClientRun) float64 { return r.P50Ms }),
			P99Ms:    median(runs, func(r ClientRun) float64 { return r.P99Ms }),
		}
	}
	for _, peer := range []string{"fortio", "h2load"} {
		var rs []float64
		for i := range res.Rounds["h2dial"] {
			rs = append(rs, res.Rounds["h2dial"][i].PerCPUS/res.Rounds[peer][i].PerCPUS)
		}
		res.Ratios["h2dial_vs_"+peer] = RatioSummary{Median: medianOf(rs), Rounds: rs}
	}
	return res, nil
}

func median[T any](xs []T, f func(T) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return medianOf(vs)
}

// medianOf is analysis.Median, with 0 rather than NaN for no values, since JSON has no NaN.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	return analysis.Median(vs)
}
