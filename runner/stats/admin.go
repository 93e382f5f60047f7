package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// AdminTimeout bounds one request to an Envoy admin.
const AdminTimeout = 5 * time.Second

// DrainingFilter selects the two gauges of draining on an Envoy admin's /stats (as the
// filter query parameter): an EnvoyFilter that changes only the connection manager updates
// the filter chain in place and drains the old chain (total_filter_chains_draining); one that
// changes the listener itself replaces it (total_listeners_draining).
const DrainingFilter = `^listener_manager\.total_(listeners|filter_chains)_draining$`

// Draining sums the draining gauges in an admin's /stats text ("name: value" lines).
func Draining(statsText string) int {
	n := 0
	for _, line := range strings.Split(statsText, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || (name != "listener_manager.total_listeners_draining" && name != "listener_manager.total_filter_chains_draining") {
			continue
		}
		var x int
		fmt.Sscan(v, &x)
		n += x
	}
	return n
}

// ServerInfo is what the lab reads from an Envoy admin's /server_info.
type ServerInfo struct {
	// Concurrency is the number of worker threads (--concurrency).
	Concurrency int
	Version     string
	// Uptime is uptime_current_epoch: how long this Envoy process has run (a restarted pod or
	// container starts again from 0; Istio runs no hot restart). 0 when absent.
	Uptime time.Duration
}

// ParseServerInfo reads an admin's /server_info.
func ParseServerInfo(raw []byte) (ServerInfo, error) {
	var si struct {
		Options struct {
			Concurrency int `json:"concurrency"`
		} `json:"command_line_options"`
		Version string `json:"version"`
		Uptime  string `json:"uptime_current_epoch"` // a protobuf Duration: "31043s"
	}
	if err := json.Unmarshal(raw, &si); err != nil {
		return ServerInfo{}, fmt.Errorf("reading /server_info: %w", err)
	}
	out := ServerInfo{Concurrency: si.Options.Concurrency, Version: si.Version}
	if si.Uptime != "" {
		d, err := time.ParseDuration(si.Uptime)
		if err != nil {
			return ServerInfo{}, fmt.Errorf("reading /server_info: uptime_current_epoch %q: %w", si.Uptime, err)
		}
		out.Uptime = d
	}
	return out, nil
}

// GetAdmin reads one path of an Envoy admin at its base URL, within AdminTimeout: the body of
// a 200, else an error naming the URL.
func GetAdmin(ctx context.Context, client *http.Client, base, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, AdminTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin %s%s: %w", base, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("admin %s%s: %w", base, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("admin %s%s: HTTP %d", base, path, resp.StatusCode)
	}
	return b, nil
}
