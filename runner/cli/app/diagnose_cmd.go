package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/igwlab/igwlab/internal/atomicfile"
	"github.com/igwlab/igwlab/runner/diagnose"
	"github.com/igwlab/igwlab/runner/stats"
)

func (e *Env) diagnoseCmd() *cobra.Command {
	return e.flagCommand("diagnose", "read-only: is a live gateway pool concentrating load, and which lever fits its clients (from Prometheus, Kubernetes or Envoy admins)", e.diagnoseFlags)
}

func (e *Env) diagnoseFlags(fs *pflag.FlagSet) func(ctx context.Context, stdout, stderr io.Writer) error {
	promURL := fs.String("prometheus", "", "read the gateway pods' Envoy stats from this Prometheus (base URL)")
	since := fs.Duration("since", 30*time.Minute, "with --prometheus: the window ends now and starts this long ago")
	startS := fs.String("start", "", "with --prometheus: the window's start (RFC 3339), instead of --since")
	endS := fs.String("end", "", "with --prometheus: the window's end (RFC 3339; default now)")
	podLabel := fs.String("pod-label", "pod", "with --prometheus: the label naming the pod")
	podRegex := fs.String("pod-regex", "istio-ingressgateway-.*", "with --prometheus: the gateway pods, by that label")
	admin := fs.String("admin", "", "read these Envoy admin endpoints directly (comma-separated base URLs, e.g. from igwlab serve or your port-forwards)")
	waypointAdmin := fs.String("waypoint-admin", "", "ambient: also read these waypoint pods' Envoy admin endpoints (comma-separated base URLs) and say at which tier the load concentrates; without --admin, the waypoint is the pool diagnosed")
	wpRegex := fs.String("waypoint-pod-regex", "", "with --prometheus: also read the waypoint's pods, by the pod label, and say at which tier the load concentrates (e.g. igw-test-waypoint-.*)")
	ztRegex := fs.String("ztunnel-pod-regex", "", "with --prometheus: also read the ztunnels, by the pod label (e.g. ztunnel-.*), for the tier-by-tier verdict")
	ztunnels := fs.String("ztunnel", "", "ambient: also read these ztunnels' metrics (comma-separated URLs of :15020/metrics, as igwlab serve prints them) for the tier-by-tier verdict")
	cadvisor := fs.String("cadvisor", "", "with --admin: also read these kubelets' cAdvisor metrics (comma-separated URLs of /metrics/cadvisor, as igwlab serve prints its node's) for the pods' CPU limits and throttling")
	var k diagnose.KubeOptions
	fs.StringVar(&k.Kubeconfig, "kubeconfig", "", "read the gateway pods' Envoy admin through Kubernetes, with this kubeconfig (default $KUBECONFIG, then ~/.kube/config); any of --kubeconfig, --context, --namespace, --selector chooses Kubernetes")
	fs.StringVar(&k.Context, "context", "", "with Kubernetes: the kubeconfig's context (default its current one)")
	fs.StringVar(&k.Namespace, "namespace", diagnose.LabNamespace, "with Kubernetes: the gateway pods' namespace")
	fs.StringVar(&k.Selector, "selector", diagnose.LabSelector, "with Kubernetes: the gateway pods' label selector (as kubectl -l takes it)")
	fs.IntVar(&k.AdminPort, "admin-port", 0, "with Kubernetes: the pods' Envoy admin port (default Istio's, 15000; Envoy Gateway, Gloo and Consul's dataplane use 19000, Emissary 8001)")
	duration := fs.Duration("duration", 30*time.Second, "with --admin or Kubernetes: how long to watch (the stats are read at the start and the end)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on each request to Prometheus, the API server or an admin endpoint (and on opening a port-forward)")
	var pick stats.Pick
	fs.StringVar(&pick.HCMPrefix, "hcm", "", "the stat prefix of the HTTP connection manager that carries the traffic (default: found by its role: Istio's outbound_<address>_<port>, else the busiest that is not the proxy's own)")
	fs.StringVar(&pick.Listener, "listener", "", "the address of the listener that takes the traffic, as its stats name it, e.g. 0.0.0.0_8443 (default: the one the connection manager runs on)")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	htmlOut := fs.String("html", "", "also write a self-contained HTML page of the findings to this file")
	baseline := fs.String("baseline", "", "compare with an earlier reading of the same gateway (a file of diagnose --json output): what moved, whether the spread did, and what it costs in reconnects")
	var gw gatewayFlags
	gw.register(fs)
	saveScenario := fs.String("save-scenario", "", "also write the pool and traffic read as a scenario file (NAME.yaml) the lab runs: igwlab suite --catalog DIR --only NAME, or igwlab predict --scenario FILE")
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		var src diagnose.Source
		kubeSet := slices.ContainsFunc([]string{"kubeconfig", "context", "namespace", "selector", "admin-port"}, func(n string) bool { return fs.Changed(n) })
		if k.AdminPort < 0 || k.AdminPort > 65535 {
			return Usagef("--admin-port %d: allowed 1..65535", k.AdminPort)
		}
		if n := btoi(*promURL != "") + btoi(*admin != "") + btoi(kubeSet); n > 1 {
			return Usagef("--prometheus, --admin and Kubernetes (--kubeconfig, --context, --namespace, --selector): choose one source")
		}
		for flag, v := range map[string]string{"hcm": pick.HCMPrefix, "listener": pick.Listener} {
			if strings.ContainsAny(v, " \t{}\"") {
				return Usagef("--%s %q: a stat name holds no spaces, braces or quotes", flag, v)
			}
		}
		if *timeout <= 0 || *timeout > 10*time.Minute {
			return Usagef("--timeout %s: allowed (0, 10m]", *timeout)
		}
		tiered := *waypointAdmin != "" || *ztunnels != ""
		if (*wpRegex != "" || *ztRegex != "") && *promURL == "" {
			return Usagef("--waypoint-pod-regex and --ztunnel-pod-regex: go with --prometheus (with --admin, give --waypoint-admin and --ztunnel)")
		}
		if tiered && (*promURL != "" || kubeSet) {
			return Usagef("--waypoint-admin and --ztunnel: go with --admin (or alone); through Prometheus or Kubernetes the tiers are not read yet")
		}
		if *ztunnels != "" && *admin == "" && *waypointAdmin == "" {
			return Usagef("--ztunnel: goes with --admin or --waypoint-admin (the Envoy tier it feeds)")
		}
		if *cadvisor != "" && *admin == "" {
			return Usagef("--cadvisor: goes with --admin (through Prometheus or Kubernetes the nodes' cAdvisor metrics are read without it)")
		}
		if (*admin != "" || kubeSet || tiered) && (*duration <= 0 || *duration > time.Hour) {
			return Usagef("--duration %s: allowed (0, 1h]", *duration)
		}
		if err := gw.check(); err != nil {
			return err
		}
		var before *diagnose.Report
		var promTiers *tierSources
		if *baseline != "" {
			b, err := diagnose.ReadBaseline(*baseline)
			if err != nil {
				return UsageError{err}
			}
			before = b
		}
		switch {
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
			ps := diagnose.PromSource{URL: *promURL, Start: start, End: end, PodLabel: *podLabel, PodRegex: *podRegex, Timeout: *timeout, Pick: pick}
			src = ps
			if *wpRegex != "" || *ztRegex != "" {
				promTiers = promTierSources(ps, *wpRegex, *ztRegex)
			}
		case *admin != "":
			urls, err := diagnose.ParseAdminURLs(*admin)
			if err != nil {
				return UsageError{err}
			}
			cad, err := diagnose.ParseCAdvisorURLs(*cadvisor)
			if err != nil {
				return UsageError{err}
			}
			fmt.Fprintf(stderr, "diagnose: watching %d admin endpoint(s) for %s\n", len(urls), *duration)
			src = diagnose.AdminSource{URLs: urls, CAdvisor: cad, Duration: *duration, Timeout: *timeout, Pick: pick}
		case kubeSet:
			if e.Lab == nil {
				return e.HandOn(ctx, "igwlab diagnose through Kubernetes (--kubeconfig, --context, --namespace, --selector)")
			}
			k.Duration, k.Timeout, k.Pick = *duration, *timeout, pick
			s, err := e.Lab.DiagnoseSource(k)
			if err != nil {
				return UsageError{err}
			}
			fmt.Fprintf(stderr, "diagnose: watching the pods %s in %s for %s\n", k.Selector, k.Namespace, *duration)
			src = s
		case *waypointAdmin != "":
			// An east-west mesh without an ingress gateway: the waypoint is the pool.
		default:
			return Usagef("diagnose needs a source: --prometheus URL, --admin URL,URL,..., or Kubernetes (--context NAME, or --namespace/--selector for the gateway's pods)")
		}
		tiers := promTiers
		if tiered {
			t, err := newTierSources(*admin != "", *waypointAdmin, *ztunnels, *duration, *timeout)
			if err != nil {
				return UsageError{err}
			}
			tiers = t
			if src == nil {
				src = t.waypoint
			}
			fmt.Fprintf(stderr, "diagnose: also reading %s for %s\n", t.what(), *duration)
		}
		w, amb, err := readTiers(ctx, src, tiers)
		if err != nil {
			return err
		}
		r := diagnose.Judge(w)
		r.Ambient = amb
		if before != nil {
			c, err := diagnose.Compare(*baseline, before, r)
			if err != nil {
				return UsageError{err}
			}
			r.Baseline = c
		}
		if l := r.Lever; gw.dialect != "" && l != nil && l.Knob != "" {
			if r.Fix, err = gw.render("", map[string]string{l.Knob: l.Value}); err != nil {
				return UsageError{err}
			}
		}
		if *saveScenario != "" {
			b, err := diagnose.SaveScenario(w, r, *saveScenario)
			if err != nil {
				return UsageError{err}
			}
			if err := atomicfile.Write(*saveScenario, b); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "diagnose: wrote %s\n", *saveScenario)
		}
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
		if r.Ambient != nil {
			diagnose.WriteTiersText(stdout, r.Ambient)
		}
		return nil
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
