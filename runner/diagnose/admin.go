package diagnose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// AdminSource reads gateway pods' Envoy admin endpoints directly (a base URL each, as
// `igwlab serve` prints them or a port-forward gives them): /stats/prometheus at the start and
// the end of Duration, /server_info for the pod's name and workers, /config_dump for what is
// in force.
type AdminSource struct {
	URLs []string
	// CAdvisor are kubelets' /metrics/cadvisor URLs (the nodes the pods run on), for their
	// CPU limits and throttling; none: not read.
	CAdvisor []string
	// Pick names the traffic's connection manager and listener instead of discovering them.
	Pick     stats.Pick
	Duration time.Duration
	// Timeout bounds each request (5 s when zero).
	Timeout time.Duration
	Client  *http.Client
}

// adminPages are the admin pages diagnose reads, which a URL given for an admin may end in.
var adminPages = []string{"/stats/prometheus", "/server_info", "/config_dump"}

// ParseAdminURLs checks a comma-separated list of admin base URLs; a URL of one of the admin's
// pages (http://127.0.0.2:34817/stats/prometheus) stands for its admin.
func ParseAdminURLs(list string) ([]string, error) {
	var out []string
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--admin %q: want an Envoy admin base URL such as http://127.0.0.1:15000", raw)
		}
		// A page's URL, as igwlab serve prints each pod's, names its admin too.
		for _, page := range adminPages {
			u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), page)
		}
		u.RawQuery, u.Fragment = "", ""
		out = append(out, strings.TrimRight(u.String(), "/"))
	}
	if len(out) == 0 {
		return nil, errors.New("--admin: no URL given (a comma-separated list of Envoy admin base URLs)")
	}
	return out, nil
}

// Window names each endpoint's pod, then samples them for Duration.
func (a AdminSource) Window(ctx context.Context) (*Window, error) {
	a = a.withDefaults()
	byPod := urlAdmins{a: a, base: map[string]string{}}
	var pods []string
	for _, u := range a.URLs {
		n, err := a.podName(ctx, u)
		if err != nil {
			return nil, err
		}
		if _, twice := byPod.base[n]; twice {
			return nil, fmt.Errorf("--admin: %s and %s are the same pod, %s: give each pod's admin once", byPod.base[n], u, n)
		}
		byPod.base[n] = u
		pods = append(pods, n)
	}
	var cpu CAdvisor
	if len(a.CAdvisor) > 0 {
		cpu = urlCAdvisor{a}
	}
	w, err := Sample(ctx, fmt.Sprintf("Envoy admin (%d endpoint(s))", len(a.URLs)), pods, byPod, a.Duration, cpu, a.Pick)
	if err != nil {
		return nil, fmt.Errorf("%w (read from %s)", err, strings.Join(a.URLs, ", "))
	}
	return w, nil
}

func (a AdminSource) withDefaults() AdminSource {
	if a.Timeout == 0 {
		a.Timeout = 5 * time.Second
	}
	if a.Client == nil {
		a.Client = http.DefaultClient
	}
	return a
}

// urlAdmins reaches each pod at its base URL.
type urlAdmins struct {
	a    AdminSource
	base map[string]string
}

func (u urlAdmins) Get(ctx context.Context, pod, path string) ([]byte, error) {
	return u.a.Get(ctx, u.base[pod], path)
}

// podName is the pod's name from the node id Istio gives its proxy
// (router~<ip>~<pod>.<namespace>~<namespace>.svc.cluster.local), or the URL's host:port.
func (a AdminSource) podName(ctx context.Context, base string) (string, error) {
	b, err := a.Get(ctx, base, "/server_info")
	var status *httpStatusError
	if errors.As(err, &status) {
		// A stats-only endpoint (Consul's and Gloo's Prometheus listeners route only the
		// stats page) has no /server_info: the pod is named by its address.
		b = nil
	} else if err != nil {
		return "", err
	}
	var info struct {
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	if json.Unmarshal(b, &info) == nil {
		if parts := strings.Split(info.Node.ID, "~"); len(parts) == 4 {
			pod, _, _ := strings.Cut(parts[2], ".")
			if pod != "" {
				return pod, nil
			}
		}
	}
	u, _ := url.Parse(base)
	return u.Host, nil
}

// Get reads path from the admin at base, bounded by Timeout (5 s when zero).
func (a AdminSource) Get(ctx context.Context, base, path string) ([]byte, error) {
	a = a.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer from %s within %s: is the admin endpoint (or its port-forward) up?", base, a.Timeout)
		}
		return nil, fmt.Errorf("cannot reach %s: %w (is the admin endpoint, or its port-forward, up?)", base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &httpStatusError{url: base + path, code: resp.StatusCode}
	}
	return b, nil
}

// httpStatusError is an admin page that answered with another status than 200.
type httpStatusError struct {
	url  string
	code int
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.url, e.code) }

// urlCAdvisor reads kubelets' cAdvisor pages at their URLs.
type urlCAdvisor struct{ a AdminSource }

func (u urlCAdvisor) Pages(ctx context.Context) ([]stats.Snapshot, error) {
	var out []stats.Snapshot
	for _, raw := range u.a.CAdvisor {
		b, err := u.a.Get(ctx, raw, "")
		if err != nil {
			return nil, err
		}
		s, err := stats.ParseSnapshot(raw, time.Now(), b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", raw, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseCAdvisorURLs checks --cadvisor: kubelets' cAdvisor URLs; a base URL stands for its
// /metrics/cadvisor.
func ParseCAdvisorURLs(list string) ([]string, error) {
	var out []string
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--cadvisor %q: want a kubelet's cAdvisor URL such as http://127.0.0.1:10255/metrics/cadvisor", raw)
		}
		if strings.Trim(u.Path, "/") == "" {
			u.Path = "/metrics/cadvisor"
		}
		out = append(out, u.String())
	}
	return out, nil
}
