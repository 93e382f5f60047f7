package inforce

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/igwlab/igwlab/runner/stats"
)

// Send sends one request through the gateway; an error is a request that did not come back
// with a 2xx.
type Send func(ctx context.Context) error

// GatewayURL sends GET base+path (http://127.0.0.1:8080/get) to a gateway reached at a URL,
// over HTTP/2 with prior knowledge as the lab's clients speak to it (the gateway's connection
// manager detects the protocol), all on one connection as a client's pool would.
func GatewayURL(base, path string) Send {
	t := &http2.Transport{AllowHTTP: true, IdleConnTimeout: 5 * time.Second,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	client := &http.Client{Transport: t}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, stats.AdminTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s%s: %w", base, path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("GET %s%s: %s", base, path, resp.Status)
		}
		return nil
	}
}

// Carried is what a waypoint check that passed saw.
type Carried struct {
	Sent int           // requests sent through the gateway in the round that passed
	Seen int           // requests the waypoint pods counted in that round
	Pods int           // waypoint pods read
	Took time.Duration // from the first round's start
}

// WaypointError is a waypoint check that timed out: what its last round sent and what each
// waypoint pod counted.
type WaypointError struct {
	Timeout time.Duration
	Sent    int
	Failed  int    // requests that did not come back 2xx
	SendErr string // the last such failure
	Seen    map[string]float64
	Unread  map[string]string // pods whose admin could not be read, and why
}

func (e *WaypointError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "after %s, ", e.Timeout)
	if len(e.Seen)+len(e.Unread) == 0 {
		b.WriteString("no waypoint pod found")
	} else {
		total := 0.0
		for _, v := range e.Seen {
			total += v
		}
		fmt.Fprintf(&b, "%d requests sent through the gateway, %d seen on %d waypoint pods", e.Sent, int(total), len(e.Seen)+len(e.Unread))
	}
	if e.Failed > 0 {
		fmt.Fprintf(&b, "; %d of %d requests failed (%s)", e.Failed, e.Sent, e.SendErr)
	}
	pods := slices.Sorted(func(yield func(string) bool) {
		for p := range e.Seen {
			if !yield(p) {
				return
			}
		}
		for p := range e.Unread {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range pods {
		if why, ok := e.Unread[p]; ok {
			fmt.Fprintf(&b, "\n  %s: %s", p, why)
		} else {
			fmt.Fprintf(&b, "\n  %s: %d requests", p, int(e.Seen[p]))
		}
	}
	return b.String()
}

// ThroughWaypoint checks that the gateway's traffic reaches the waypoint: it reads every
// waypoint pod's request counter (stats.WaypointRequests), sends n requests through the
// gateway, reads the counters again, and passes when they moved by at least n in all. A round
// that falls short (the waypoint's pods still starting, istiod not yet pushing the route
// through it) is repeated until timeout, which returns a *WaypointError with each pod's count.
func ThroughWaypoint(ctx context.Context, send Send, waypoints Pool, n int, timeout time.Duration) (Carried, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		c, e, err := waypointRound(ctx, send, waypoints, n)
		if err != nil {
			return Carried{}, err
		}
		if e == nil {
			c.Took = time.Since(start)
			return c, nil
		}
		if time.Now().After(deadline) {
			e.Timeout = timeout
			return Carried{}, e
		}
		select {
		case <-ctx.Done():
			return Carried{}, ctx.Err()
		case <-time.After(Poll):
		}
	}
}

// waypointRound is one round; a pod that cannot be read fails the round, not the check.
func waypointRound(ctx context.Context, send Send, waypoints Pool, n int) (Carried, *WaypointError, error) {
	pods, err := waypoints.Pods(ctx)
	if err != nil {
		return Carried{}, nil, err
	}
	e := &WaypointError{Seen: map[string]float64{}, Unread: map[string]string{}}
	if len(pods) == 0 {
		return Carried{}, e, nil
	}
	before := waypointCounts(ctx, waypoints, pods, e.Unread)
	for range n {
		if err := send(ctx); err != nil {
			if ctx.Err() != nil {
				return Carried{}, nil, ctx.Err()
			}
			e.Failed, e.SendErr = e.Failed+1, err.Error()
		}
		e.Sent++
	}
	after := waypointCounts(ctx, waypoints, pods, e.Unread)
	seen := 0.0
	for _, p := range pods {
		if _, bad := e.Unread[p]; bad {
			continue
		}
		d := after[p] - before[p]
		if d < 0 { // the pod restarted between the reads
			d = after[p]
		}
		e.Seen[p] = d
		seen += d
	}
	if len(e.Unread) > 0 || e.Failed > 0 || seen < float64(n) {
		return Carried{}, e, nil
	}
	return Carried{Sent: n, Seen: int(seen), Pods: len(pods)}, nil, nil
}

func waypointCounts(ctx context.Context, pool Pool, pods []string, unread map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, p := range pods {
		v, err := waypointCount(ctx, pool, p)
		if err != nil {
			unread[p] = err.Error()
			continue
		}
		out[p] = v
	}
	return out
}

func waypointCount(ctx context.Context, pool Pool, pod string) (float64, error) {
	raw, err := pool.Admin(ctx, pod, "/stats/prometheus")
	if err != nil {
		return 0, err
	}
	snap, err := stats.ParseSnapshot(pod, time.Now(), raw)
	if err != nil {
		return 0, err
	}
	if !snap.Has("envoy_http_downstream_rq_total", nil) {
		return 0, errors.New("no envoy_http_downstream_rq_total in /stats/prometheus: is the waypoint's proxyStatsMatcher including http.*?")
	}
	return stats.WaypointRequests(snap), nil
}
