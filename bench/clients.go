package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"
)

// ClientRun is one client's run against the reference server.
type ClientRun struct {
	Requests int64   `json:"requests"`
	CPUS     float64 `json:"cpu_s"`  // user + system time of the client process (rusage)
	WallS    float64 `json:"wall_s"` // the process's whole life
	RPS      float64 `json:"rps"`
	PerCPUS  float64 `json:"requests_per_cpu_s"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
}

// LayoutResult holds every round of every client in one layout, and the medians.
type LayoutResult struct {
	Name   string                  `json:"name"`
	Layout string                  `json:"layout"`
	Rounds map[string][]ClientRun  `json:"rounds"`
	Median map[string]ClientRun    `json:"median"`
	Ratios map[string]RatioSummary `json:"ratios"`
}

// ClientResult is the client comparison: the multiplexed layout the lab's dialing client uses
// (its ratios are the headline), and one connection per stream, where all three line up.
type ClientResult struct {
	Layouts []*LayoutResult `json:"layouts"`
}

// RatioSummary is a ratio of requests per client CPU-second, taken round by round (the clients
// of a round run back to back, so they share the machine's state), with its range.
type RatioSummary struct {
	Median float64   `json:"median"`
	Rounds []float64 `json:"rounds"`
}

// measured runs a command to completion and returns its output and its own CPU time.
func measured(ctx context.Context, env []string, name string, args ...string) ([]byte, time.Duration, time.Duration, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(errb.String()))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, 0, 0, fmt.Errorf("%s: no rusage on this system", name)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return out.Bytes(), cpu, wall, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// clientSpec is a layout: streams in flight in all, over conns connections (1, multiplexed, or
// one per stream), closed loop.
type clientSpec struct {
	url      string
	streams  int
	conns    int
	duration time.Duration
}

func runH2dial(ctx context.Context, bin string, s clientSpec) (ClientRun, error) {
	mode := "distinct"
	if s.conns == 1 && s.streams > 1 {
		mode = "shared" // one transport: its streams share a connection up to the server's limit
	}
	out, cpu, wall, err := measured(ctx, nil, bin, "-url", s.url, "-mode", mode, "-c", strconv.Itoa(s.streams),
		"-duration", s.duration.String(), "-json")
	if err != nil {
		return ClientRun{}, err
	}
	var r struct {
		Requests, Errors int64
		ElapsedS         float64 `json:"elapsed_s"`
		Latency          struct {
			P50 float64 `json:"p50_ms"`
			P99 float64 `json:"p99_ms"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return ClientRun{}, fmt.Errorf("h2dial output: %w", err)
	}
	if r.Errors > 0 {
		return ClientRun{}, fmt.Errorf("h2dial: %d errors", r.Errors)
	}
	return newClientRun(r.Requests, cpu, wall, s.duration, r.Latency.P50, r.Latency.P99), nil
}

func runFortioChild(ctx context.Context, self string, s clientSpec) (ClientRun, error) {
	// fortio has one connection per goroutine whatever the layout: it cannot multiplex.
	out, cpu, wall, err := measured(ctx, nil, self, "_fortio", "-url", s.url, "-c", strconv.Itoa(s.streams), "-duration", s.duration.String())
	if err != nil {
		return ClientRun{}, err
	}
	var r fortioOut
	if err := json.Unmarshal(out, &r); err != nil {
		return ClientRun{}, fmt.Errorf("fortio output: %w", err)
	}
	if r.Errors > 0 {
		return ClientRun{}, fmt.Errorf("fortio: %d errors", r.Errors)
	}
	return newClientRun(r.Requests, cpu, wall, s.duration, r.P50Ms, r.P99Ms), nil
}

var h2loadSucceeded = regexp.MustCompile(`requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored`)

// runH2load measures h2load twice: a run with nothing but its summary for throughput and CPU
// (its per-request log costs it a third of its CPU), then a shorter run with the log for the
// percentiles, which its summary lacks.
func runH2load(ctx context.Context, bin string, s clientSpec) (ClientRun, error) {
	args := func(d time.Duration) []string {
		secs := max(1, int(d.Round(time.Second)/time.Second))
		return []string{"-c", strconv.Itoa(s.conns), "-m", strconv.Itoa(s.streams / s.conns), "-t", "1", "-D", strconv.Itoa(secs)}
	}
	out, cpu, wall, err := measured(ctx, nil, bin, append(args(s.duration), s.url)...)
	if err != nil {
		return ClientRun{}, err
	}
	ok, err := h2loadSucceededCount(out)
	if err != nil {
		return ClientRun{}, err
	}
	logf, err := os.CreateTemp("", "h2load-*.tsv")
	if err != nil {
		return ClientRun{}, err
	}
	logf.Close()
	defer os.Remove(logf.Name())
	out, _, _, err = measured(ctx, nil, bin, append(args(min(s.duration, 3*time.Second)), "--log-file="+logf.Name(), s.url)...)
	if err != nil {
		return ClientRun{}, err
	}
	if _, err := h2loadSucceededCount(out); err != nil {
		return ClientRun{}, err
	}
	p50, p99, err := h2loadPercentiles(logf.Name())
	if err != nil {
		return ClientRun{}, err
	}
	return newClientRun(ok, cpu, wall, s.duration, p50, p99), nil
}

func h2loadSucceededCount(out []byte) (int64, error) {
	m := h2loadSucceeded.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("h2load output has no request summary:\n%s", tail(string(out)))
	}
	if string(m[2]) != "0" || string(m[3]) != "0" {
		return 0, fmt.Errorf("h2load: %s failed, %s errored", m[2], m[3])
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// h2loadPercentiles reads h2load's per-request log (start time, status, duration in us).
func h2loadPercentiles(path string) (p50, p99 float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var us []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[2], 64); err == nil {
			us = append(us, v)
		}
	}
	if len(us) == 0 {
		return 0, 0, fmt.Errorf("h2load log %s is empty", path)
	}
	slices.Sort(us)
	q := func(p float64) float64 { return us[min(len(us)-1, int(p*float64(len(us))))] / 1000 }
	return q(0.50), q(0.99), sc.Err()
}

func newClientRun(requests int64, cpu, wall, window time.Duration, p50, p99 float64) ClientRun {
	r := ClientRun{Requests: requests, CPUS: cpu.Seconds(), WallS: wall.Seconds(), P50Ms: p50, P99Ms: p99,
		RPS: float64(requests) / window.Seconds()}
	if cpu > 0 {
		r.PerCPUS = float64(requests) / cpu.Seconds()
	}
	return r
}

type fortioOut struct {
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
}

// runFortio is the hidden `_fortio` subcommand: fortio's HTTP runner as fortio -h2 runs it
// (Go's standard client over h2c, one client and connection per goroutine, as fast as
// possible), with nothing of ours on its request path.
func runFortio(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("_fortio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "target")
	c := fs.Int("c", 16, "goroutines (connections)")
	d := fs.Duration("duration", 8*time.Second, "run time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log.SetLogLevelQuiet(log.Error)
	o := fhttp.HTTPRunnerOptions{}
	o.RunnerOptions = periodic.RunnerOptions{QPS: -1, Duration: *d, NumThreads: *c, Out: io.Discard,
		Percentiles: []float64{50, 99}}
	o.HTTPOptions = fhttp.HTTPOptions{URL: *url, H2: true, DisableFastClient: true}
	o.HTTPOptions.InitHeaders()
	res, err := fhttp.RunHTTPTest(&o)
	if err != nil {
		return err
	}
	out := fortioOut{}
	for code, n := range res.RetCodes {
		out.Requests += n
		if code != 200 {
			out.Errors += n
		}
	}
	for _, p := range res.DurationHistogram.Percentiles {
		switch p.Percentile {
		case 50:
			out.P50Ms = p.Value * 1000
		case 99:
			out.P99Ms = p.Value * 1000
		}
	}
	return json.NewEncoder(stdout).Encode(out)
}
