package stats

import (
	"encoding/json"
	"fmt"
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
}

// ParseServerInfo reads an admin's /server_info.
func ParseServerInfo(raw []byte) (ServerInfo, error) {
	var si struct {
		Options struct {
			Concurrency int `json:"concurrency"`
		} `json:"command_line_options"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &si); err != nil {
		return ServerInfo{}, fmt.Errorf("reading /server_info: %w", err)
	}
	return ServerInfo{Concurrency: si.Options.Concurrency, Version: si.Version}, nil
}
