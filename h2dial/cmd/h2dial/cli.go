package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/igwlab/igwlab/h2dial"
	"github.com/igwlab/igwlab/internal/cpuprofile"
)

// usageError is a bad flag or argument: exit code 2, as flag parsing does.
type usageError struct{ error }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

type headerFlag http.Header

func (h headerFlag) String() string { return "" }
func (h headerFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want \"Name: value\"", v)
	}
	http.Header(h).Add(strings.TrimSpace(k), strings.TrimSpace(val))
	return nil
}

// Run parses args, drives the load and writes the result to stdout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("h2dial", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := h2dial.Options{Header: http.Header{}}
	var mode, path string
	var asJSON, idle bool
	fs.StringVar(&o.URL, "url", "", "target URL: http://host:port/path (h2c) or https://... (required unless -idle)")
	fs.StringVar(&path, "path", "", "request path, replacing the path of -url")
	fs.StringVar(&mode, "mode", string(h2dial.Shared), "transport layout: shared (one transport, dials at the stream cap) or distinct (one per worker)")
	fs.IntVar(&o.Concurrency, "c", h2dial.DefaultConcurrency, "workers (closed loop) or most requests in flight (with -qps)")
	fs.DurationVar(&o.Duration, "duration", h2dial.DefaultDuration, "how long to send")
	fs.DurationVar(&o.Duration, "d", h2dial.DefaultDuration, "shorthand for -duration")
	fs.Float64Var(&o.QPS, "qps", 0, "total request rate, open loop; 0 = closed loop as fast as possible")
	fs.StringVar(&o.SlowURL, "slow-url", "", "URL requested by slow workers on the shared transport")
	fs.IntVar(&o.SlowWorkers, "slow-workers", h2dial.DefaultSlowWorkers, "number of slow workers (with -slow-url)")
	fs.Var(headerFlag(o.Header), "header", `extra request header "Name: value" (repeatable)`)
	fs.DurationVar(&o.Timeout, "timeout", 0, "per-request timeout (0 = none)")
	fs.IntVar(&o.BodyBytes, "body-bytes", 0, "POST a body of this many bytes with every request (0 = GET)")
	fs.BoolVar(&o.LongStream, "long-stream", false, "each request is a long-lived stream (an event stream such as /sse, a long poll): read as it arrives and opened again when it ends; counts messages and, for /sse, each event's delay")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow targets outside 127.0.0.0/8")
	fs.BoolVar(&o.InsecureTLS, "insecure", false, "skip certificate checks for https targets")
	fs.BoolVar(&o.ColdStart, "cold-start", false, "start all workers at once on a cold shared transport (it opens extra connections before learning the server's stream limit)")
	fs.BoolVar(&asJSON, "json", false, "write the result as JSON")
	procs := fs.Int("procs", 1, "CPU cores the client may use (0 = all). One, like h2load's one thread: at loopback rates a second core costs more in cross-core wake-ups than it adds")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.BoolVar(&idle, "idle", false, "do nothing until stopped (the load generator pod's idle process)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q (flags come before nothing else)", fs.Args())}
	}
	if idle {
		// A sleeping loop rather than select{}: with no other goroutine the runtime would
		// report a deadlock.
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Hour):
			}
		}
		return nil
	}
	o.Mode = h2dial.Mode(mode)
	if path != "" && o.URL != "" {
		u, err := url.Parse(o.URL)
		if err != nil {
			return usageError{fmt.Errorf("-url %q: %v", o.URL, err)}
		}
		u.Path, u.RawQuery = path, ""
		if p, q, ok := strings.Cut(path, "?"); ok {
			u.Path, u.RawQuery = p, q
		}
		o.URL = u.String()
	}
	if *procs < 0 {
		return usageError{fmt.Errorf("-procs %d: allowed 0 (all cores) or more", *procs)}
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	stopProfile, err := cpuprofile.Start(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	res, err := h2dial.Run(ctx, o)
	if err != nil {
		return usageError{err}
	}
	if asJSON {
		return res.WriteJSON(stdout)
	}
	return res.WriteText(stdout)
}
