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
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// AdminSource reads gateway pods' Envoy admin endpoints directly (a base URL each, as
// `igwlab serve` prints them or a port-forward gives them): /stats/prometheus at the start and
// the end of Duration, /server_info for the pod's name and workers, /config_dump for what is
// in force.
type AdminSource struct {
	URLs     []string
	Duration time.Duration
	// Timeout bounds each request (5 s when zero).
	Timeout time.Duration
	Client  *http.Client
}

// ParseAdminURLs checks a comma-separated list of admin base URLs.
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
		out = append(out, strings.TrimRight(u.String(), "/"))
	}
	if len(out) == 0 {
		return nil, errors.New("--admin: no URL given (a comma-separated list of Envoy admin base URLs)")
	}
	return out, nil
}

// Window reads every endpoint, waits Duration, and reads them again.
func (a AdminSource) Window(ctx context.Context) (*Window, error) {
	if a.Timeout == 0 {
		a.Timeout = 5 * time.Second
	}
	if a.Client == nil {
		a.Client = &http.Client{}
	}
	names := make([]string, len(a.URLs))
	for i, u := range a.URLs {
		n, err := a.podName(ctx, u)
		if err != nil {
			return nil, err
		}
		names[i] = n
	}
	start := time.Now()
	pre, err := a.readAll(ctx, names)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(a.Duration):
	}
	post, err := a.readAll(ctx, names)
	if err != nil {
		return nil, err
	}
	w, err := windowFrom(fmt.Sprintf("Envoy admin (%d endpoint(s))", len(a.URLs)), pre, post, time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("%w (read from %s)", err, strings.Join(a.URLs, ", "))
	}
	w.Start, w.End = start, time.Now()
	var read int
	for _, u := range a.URLs {
		dump, err := a.get(ctx, u, "/config_dump")
		if err != nil {
			w.Missing = append(w.Missing, fmt.Sprintf("%s/config_dump: %v", u, err))
			continue
		}
		f, err := inForce(dump, w.Names.HCMPrefix)
		if err != nil {
			w.Missing = append(w.Missing, u+": "+err.Error())
			continue
		}
		read++
		if w.InForce == nil {
			w.InForce = f
		}
	}
	if w.InForce != nil {
		w.InForce.Pods = read
	}
	return w, nil
}

func (a AdminSource) readAll(ctx context.Context, names []string) ([]stats.Snapshot, error) {
	out := make([]stats.Snapshot, len(a.URLs))
	errs := make([]error, len(a.URLs))
	var wg sync.WaitGroup
	for i, u := range a.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := a.get(ctx, u, "/stats/prometheus")
			if err != nil {
				errs[i] = err
				return
			}
			out[i], errs[i] = stats.ParseSnapshot(names[i], time.Now(), raw)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s/stats/prometheus: %w", a.URLs[i], err)
		}
	}
	return out, nil
}

// podName is the pod's name from the node id Istio gives its proxy
// (router~<ip>~<pod>.<namespace>~<namespace>.svc.cluster.local), or the URL's host:port.
func (a AdminSource) podName(ctx context.Context, base string) (string, error) {
	b, err := a.get(ctx, base, "/server_info")
	if err != nil {
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

func (a AdminSource) get(ctx context.Context, base, path string) ([]byte, error) {
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
		return nil, fmt.Errorf("%s%s: HTTP %d", base, path, resp.StatusCode)
	}
	return b, nil
}
