package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/internal/atomicfile"
	"github.com/igwlab/igwlab/runner/diagnose"
)

// diagnoseSource is where diagnose reads a pool from.
type diagnoseSource interface {
	Window(ctx context.Context) (*diagnose.Window, error)
}

func (e *Env) diagnoseCmd() *cobra.Command {
	return e.flagCommand("diagnose", "read-only: is a live gateway pool concentrating load, and which lever fits its clients (from Prometheus or Envoy admins)", diagnoseFlags)
}

func diagnoseFlags(fs *pflag.FlagSet) func(ctx context.Context, stdout, stderr io.Writer) error {
	promURL := fs.String("prometheus", "", "read the gateway pods' Envoy stats from this Prometheus (base URL)")
	since := fs.Duration("since", 30*time.Minute, "with --prometheus: the window ends now and starts this long ago")
	startS := fs.String("start", "", "with --prometheus: the window's start (RFC 3339), instead of --since")
	endS := fs.String("end", "", "with --prometheus: the window's end (RFC 3339; default now)")
	podLabel := fs.String("pod-label", "pod", "with --prometheus: the label naming the pod")
	podRegex := fs.String("pod-regex", "istio-ingressgateway-.*", "with --prometheus: the gateway pods, by that label")
	admin := fs.String("admin", "", "read these Envoy admin endpoints directly (comma-separated base URLs, e.g. from igwlab serve or your port-forwards)")
	duration := fs.Duration("duration", 30*time.Second, "with --admin: how long to watch (the stats are read at the start and the end)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on each request to Prometheus or an admin endpoint")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	htmlOut := fs.String("html", "", "also write a self-contained HTML page of the findings to this file")
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		var src diagnoseSource
		switch {
		case *promURL != "" && *admin != "":
			return Usagef("--prometheus and --admin: choose one source")
		case *promURL != "":
			end := time.Now()
			if *endS != "" {
				t, err := time.Parse(time.RFC3339, *endS)
				if err != nil {
					return Usagef("--end %q: want RFC 3339, such as 2026-11-30T12:00:00Z", *endS)
				}
				end = t
			}
			if *since <= 0 || *since > 31*24*time.Hour {
				return Usagef("--since %s: allowed (0, 744h]", *since)
			}
			start := end.Add(-*since)
			if *startS != "" {
				t, err := time.Parse(time.RFC3339, *startS)
				if err != nil {
					return Usagef("--start %q: want RFC 3339, such as 2026-11-30T11:30:00Z", *startS)
				}
				start = t
			}
			if !end.After(start) {
				return Usagef("--start %s is not before --end %s", start.Format(time.RFC3339), end.Format(time.RFC3339))
			}
			src = diagnose.PromSource{URL: *promURL, Start: start, End: end, PodLabel: *podLabel, PodRegex: *podRegex, Timeout: *timeout}
		case *admin != "":
			urls, err := diagnose.ParseAdminURLs(*admin)
			if err != nil {
				return UsageError{err}
			}
			if *duration <= 0 || *duration > time.Hour {
				return Usagef("--duration %s: allowed (0, 1h]", *duration)
			}
			fmt.Fprintf(stderr, "diagnose: watching %d admin endpoint(s) for %s\n", len(urls), *duration)
			src = diagnose.AdminSource{URLs: urls, Duration: *duration, Timeout: *timeout}
		default:
			return Usagef("diagnose needs a source: --prometheus URL, or --admin URL,URL,...")
		}
		if *timeout <= 0 || *timeout > 10*time.Minute {
			return Usagef("--timeout %s: allowed (0, 10m]", *timeout)
		}
		w, err := src.Window(ctx)
		if err != nil {
			return err
		}
		r := diagnose.Judge(w)
		if *htmlOut != "" {
			page, err := diagnose.HTML(r)
			if err != nil {
				return err
			}
			if err := atomicfile.Write(*htmlOut, page); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "diagnose: wrote %s\n", *htmlOut)
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}
		diagnose.WriteText(stdout, r)
		return nil
	}
}
