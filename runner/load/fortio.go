package load

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http/httptrace"
	"slices"
	"sort"
	"sync"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"

	"github.com/igwlab/igwlab/h2dial"
)

// fortio is a fixed pool that queues: it runs in this process as a library, and in the lab's
// cluster in the fortio pod of the loadgen namespace.
func init() {
	Register(Client{Kind: "fortio", Run: runFortio, InCluster: InCluster{
		Exec: &Exec{Selector: "app=fortio", Container: "fortio",
			Command: func(s Spec, target string) []string { return append([]string{"fortio"}, FortioArgs(s, target)...) }},
		Read: readJSON("fortio", func(r *fhttp.HTTPRunnerResults) *Result { return FromFortio(r, "") })}})
}

var fortioLogOnce sync.Once

// runFortio runs fortio's HTTP runner in-process: -h2 (std client over h2c), -c goroutines,
// -qps total. Each goroutine owns one client and one transport, hence one connection.
func runFortio(ctx context.Context, s Spec) (*Result, error) {
	fortioLogOnce.Do(func() { log.SetLogLevelQuiet(log.Error) })
	var out bytes.Buffer
	counts := &connCounter{reqs: map[any]int64{}}
	o := fhttp.HTTPRunnerOptions{}
	o.RunnerOptions = periodic.RunnerOptions{
		QPS: s.QPS, Duration: s.Duration, NumThreads: s.Concurrency, Out: &out,
		Percentiles: []float64{50, 75, 90, 99, 99.9}, Stop: periodic.NewAborter(),
	}
	if s.QPS == 0 {
		o.RunnerOptions.QPS = -1 // fortio's "as fast as possible"
	}
	o.HTTPOptions = fhttp.HTTPOptions{URL: s.scheme() + s.Target + s.Path, H2: true, DisableFastClient: true,
		NumConnections: 1, AllowHalfClose: false}
	o.HTTPOptions.Insecure = s.TLS // the local gateway's own certificate
	o.HTTPOptions.InitHeaders()
	for k, v := range s.Headers {
		if err := o.HTTPOptions.AddAndValidateExtraHeader(k + ": " + v); err != nil {
			return nil, fmt.Errorf("fortio header %s: %w", k, err)
		}
	}
	o.HTTPOptions.ClientTrace = func(context.Context) *httptrace.ClientTrace { return counts.trace }
	counts.trace = &httptrace.ClientTrace{GotConn: counts.got}
	stop := o.RunnerOptions.Stop
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop.Abort(false)
		case <-done:
		}
	}()
	res, err := fhttp.RunHTTPTest(&o)
	close(done)
	if err != nil {
		return nil, fmt.Errorf("fortio: %w", err)
	}
	r := FromFortio(res, out.String())
	r.ConnectionsOpened, r.PerConnection = counts.result()
	return r, nil
}

// FromFortio reads fortio's result (its -json output) as a Result. Connections come from
// fortio's own socket count; the in-process driver replaces them with what httptrace saw.
func FromFortio(res *fhttp.HTTPRunnerResults, text string) *Result {
	r := &Result{Client: "fortio", RPS: res.ActualQPS, Native: res, Text: text, ConnectionsOpened: int(res.SocketCount)}
	for code, n := range res.RetCodes {
		r.Requests += n
		if code < 200 || code >= 400 {
			r.Errors += n
		}
	}
	if h := res.DurationHistogram; h != nil {
		r.Latency = h2dial.Latency{Count: uint64(h.Count), Min: h.Min * 1000, Mean: h.Avg * 1000, Max: h.Max * 1000}
		for _, p := range h.Percentiles {
			v := p.Value * 1000
			switch p.Percentile {
			case 50:
				r.Latency.P50 = v
			case 75:
				r.Latency.P75 = v
			case 90:
				r.Latency.P90 = v
			case 99:
				r.Latency.P99 = v
			case 99.9:
				r.Latency.P999 = v
			}
		}
	}
	return r
}

// connCounter credits each request to the connection it used, through httptrace.
type connCounter struct {
	mu    sync.Mutex
	reqs  map[any]int64
	order []any
	trace *httptrace.ClientTrace
}

func (c *connCounter) got(info httptrace.GotConnInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.reqs[info.Conn]; !ok {
		c.order = append(c.order, info.Conn)
	}
	c.reqs[info.Conn]++
}

func (c *connCounter) result() (int, []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int64, 0, len(c.order))
	for _, k := range c.order {
		out = append(out, c.reqs[k])
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return len(out), out
}

// FortioArgs is fortio's command line for a spec: flags before the URL, JSON to stdout.
func FortioArgs(s Spec, target string) []string {
	args := []string{"load", "-json", "-", "-t", s.Duration.String(), "-h2", "-c", fmt.Sprint(s.Concurrency),
		"-qps", fmt.Sprint(s.QPS)}
	if s.QPS == 0 {
		args[len(args)-1] = "-1"
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		args = append(args, "-H", k+": "+s.Headers[k])
	}
	return append(args, "http://"+target+s.Path)
}
