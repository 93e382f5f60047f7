package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/igwlab/igwlab/runner/conformance"
)

// PoolResult is what the local pool costs the machine, this build against the one it replaces,
// measured round by round side by side: the resident memory each open stream adds (a client
// that opens streams and never reads, as h2spec 5.1.2 does) and the CPU the whole `igwlab serve`
// process spends per request of a steady h2load run.
type PoolResult struct {
	Setup  string                  `json:"setup"`
	Base   string                  `json:"base"` // the replaced build's binary
	Rounds map[string][]PoolCost   `json:"rounds"`
	Median map[string]PoolCost     `json:"median"`
	Ratios map[string]RatioSummary `json:"ratios"` // this build / base, per round
}

// PoolCost is one build's measurement in one round.
type PoolCost struct {
	BytesPerStream float64 `json:"resident_bytes_per_open_stream"`
	CPUPerRequest  float64 `json:"cpu_us_per_request"`
}

const (
	heldStreams  = 10000 // well under a pod's memory limit at either build's cost
	poolRequests = 10000
)

var poolBuilds = []string{"this", "base"}

// poolBench measures both builds, alternating within each round.
func poolBench(ctx context.Context, o Options, progress io.Writer) (*PoolResult, error) {
	bins := map[string]string{"this": o.Igwlab, "base": o.BaseIgwlab}
	r := &PoolResult{Base: o.BaseIgwlab, Rounds: map[string][]PoolCost{}, Median: map[string]PoolCost{}, Ratios: map[string]RatioSummary{},
		Setup: fmt.Sprintf("igwlab serve --pods 1; %d streams opened on one connection with a zero window and never read; "+
			"h2load -c 4 -m 32 -n %d /get for the CPU (user+system of the serve process)", heldStreams, poolRequests)}
	for round := 1; round <= o.Rounds; round++ {
		for _, b := range poolBuilds {
			fmt.Fprintf(progress, "pool round %d/%d: %s build\n", round, o.Rounds, b)
			c, err := measurePool(ctx, bins[b], o.H2load)
			if err != nil {
				return nil, fmt.Errorf("%s build (%s): %w", b, bins[b], err)
			}
			r.Rounds[b] = append(r.Rounds[b], c)
		}
	}
	for _, b := range poolBuilds {
		r.Median[b] = PoolCost{BytesPerStream: median(r.Rounds[b], func(c PoolCost) float64 { return c.BytesPerStream }),
			CPUPerRequest: median(r.Rounds[b], func(c PoolCost) float64 { return c.CPUPerRequest })}
	}
	for name, f := range map[string]func(PoolCost) float64{
		"bytes_per_stream_this_vs_base": func(c PoolCost) float64 { return c.BytesPerStream },
		"cpu_per_request_this_vs_base":  func(c PoolCost) float64 { return c.CPUPerRequest },
	} {
		var rs []float64
		for i := range r.Rounds["this"] {
			rs = append(rs, f(r.Rounds["this"][i])/f(r.Rounds["base"][i]))
		}
		r.Ratios[name] = RatioSummary{Median: medianOf(rs), Rounds: rs}
	}
	return r, nil
}

// measurePool starts one build's serve, runs the CPU load, then holds the streams.
func measurePool(ctx context.Context, bin, h2load string) (PoolCost, error) {
	out, err := os.MkdirTemp("", "igwlab-bench-pool-")
	if err != nil {
		return PoolCost{}, err
	}
	defer os.RemoveAll(out)
	s, err := conformance.StartServe(ctx, bin, out)
	if err != nil {
		return PoolCost{}, err
	}
	defer func() { _, _ = s.Stop() }()
	pid := s.Cmd.Process.Pid

	cpu0 := processCPU(pid)
	outH, _, _, err := measured(ctx, nil, h2load, "-c", "4", "-m", "32", "-n", strconv.Itoa(poolRequests), "http://"+s.VIP+"/get")
	if err != nil {
		return PoolCost{}, err
	}
	done, err := h2loadSucceededCount(outH)
	if err != nil {
		return PoolCost{}, err
	}
	cpu := processCPU(pid) - cpu0

	rss0 := conformance.RSS(pid)
	conn, err := holdStreams(s.VIP, heldStreams)
	if err != nil {
		return PoolCost{}, err
	}
	defer conn.Close()
	rss1 := settledRSS(ctx, pid, 30*time.Second)
	return PoolCost{BytesPerStream: float64(rss1-rss0) / heldStreams, CPUPerRequest: float64(cpu.Microseconds()) / float64(done)}, nil
}

// holdStreams opens n streams for / on one connection with a zero stream window, so every
// response waits in the gateway, and never reads.
func holdStreams(addr string, n int) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	var b, hb bytes.Buffer
	b.WriteString(http2.ClientPreface)
	fr, enc := http2.NewFramer(&b, nil), hpack.NewEncoder(&hb)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	for i := range n {
		hb.Reset()
		for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: addr}, {Name: ":path", Value: "/"}} {
			_ = enc.WriteField(f)
		}
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	}
	if _, err := c.Write(b.Bytes()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// settledRSS waits until the process's resident memory has not grown by more than 0.5% for
// two seconds (every held stream has its response by then), or until the timeout.
func settledRSS(ctx context.Context, pid int, timeout time.Duration) int64 {
	deadline := time.Now().Add(timeout)
	last, since := conformance.RSS(pid), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		now := conformance.RSS(pid)
		if float64(now) > float64(last)*1.005 {
			last, since = now, time.Now()
			continue
		}
		if time.Since(since) >= 2*time.Second {
			break
		}
	}
	return last
}

// processCPU is another process's user and system time (Linux /proc; 0 elsewhere).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields after it are fixed.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// poolGoals: the conformance work may not make the pool dearer to run. A held stream may cost
// what a pod's accounting charges it (16 KiB for the stream, 16 KiB for the body it holds), so
// that a pod's limit bounds the machine too; a request, at most a tenth more CPU than before.
func poolGoals(p *PoolResult) []Goal {
	b, c := p.Median["this"].BytesPerStream, p.Ratios["cpu_per_request_this_vs_base"].Median
	return []Goal{
		{Name: "resident bytes per open stream, within what a pod charges", Want: "<= 32768", Measured: b, Unit: " B", Met: b <= 32768},
		{Name: "pool CPU per request vs the replaced build", Want: "<= 1.10", Measured: c, Unit: "x", Met: c <= 1.10},
	}
}
