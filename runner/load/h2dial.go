package load

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/igwlab/igwlab/h2dial"
)

// h2dial dials new connections at the stream cap: it runs in this process, and in the lab's
// cluster in the h2dial pod of the loadgen namespace.
func init() {
	Register(Client{Kind: "h2dial", Run: runH2dial, InCluster: InCluster{
		Exec: &Exec{Selector: "app=h2dial", Container: "h2dial",
			Command: func(s Spec, target string) []string { return append([]string{"/h2dial"}, H2dialArgs(s, target)...) }},
		Read: readJSON("h2dial", FromH2dial)}})
}

func runH2dial(ctx context.Context, s Spec) (*Result, error) {
	o := h2dial.Options{
		URL: s.scheme() + s.Target + s.Path, Mode: h2dial.Mode(s.Mode), Concurrency: s.Concurrency, InsecureTLS: s.TLS,
		Duration: s.Duration, QPS: s.QPS, SlowWorkers: s.SlowWorkers, AllowRemote: s.AllowRemote, BodyBytes: s.BodyBytes, LongStream: s.LongStream,
		Header: map[string][]string{},
	}
	if s.SlowPath != "" {
		o.SlowURL = s.scheme() + s.Target + s.SlowPath
	}
	for k, v := range s.Headers {
		o.Header.Set(k, v)
	}
	r, err := h2dial.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	return FromH2dial(r), nil
}

// FromH2dial reads an h2dial result (run here or in a pod) as a Result.
func FromH2dial(r *h2dial.Result) *Result {
	var text strings.Builder
	_ = r.WriteText(&text)
	out := &Result{Client: "h2dial", Requests: r.Requests, Errors: r.Errors, RPS: r.RPS, Latency: r.Latency,
		ConnectionsOpened: r.ConnectionsOpened, Slow: r.Slow, ErrorKinds: r.ErrorKinds, Native: r, Text: text.String(),
		OfferedRPS: r.TargetQPS, Unsent: r.Unsent, StreamsOpened: r.StreamsOpened, StreamEnds: r.StreamEnds, Conns: r.Streams}
	if r.SendLag != nil {
		out.SendLagP99 = r.SendLag.P99
	}
	for _, c := range r.Connections {
		out.PerConnection = append(out.PerConnection, c.Requests)
	}
	return out
}

// H2dialArgs is h2dial's command line for a spec against an in-cluster target.
func H2dialArgs(s Spec, target string) []string {
	args := []string{"-url", "http://" + target + s.Path, "-mode", s.Mode, "-c", fmt.Sprint(s.Concurrency),
		"-duration", s.Duration.String(), "-json", "-allow-remote"}
	if s.QPS > 0 {
		args = append(args, "-qps", fmt.Sprint(s.QPS))
	}
	if s.BodyBytes > 0 {
		args = append(args, "-body-bytes", fmt.Sprint(s.BodyBytes))
	}
	if s.LongStream {
		args = append(args, "-long-stream")
	}
	if s.SlowPath != "" {
		args = append(args, "-slow-url", "http://"+target+s.SlowPath, "-slow-workers", fmt.Sprint(s.SlowWorkers))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		args = append(args, "-header", k+": "+s.Headers[k])
	}
	return args
}
