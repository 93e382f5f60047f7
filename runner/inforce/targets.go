package inforce

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// PodMonitorPool is the scrape pool prometheus-operator makes of a PodMonitor's first endpoint.
func PodMonitorPool(namespace, name string) string {
	return "podMonitor/" + namespace + "/" + name + "/0"
}

// LiveTargets waits until Prometheus (get reads a path of its HTTP API) has, in every one of
// pools, active targets whose last scrape all succeeded, and returns how many each has. On
// timeout the error names each pool that has none or has one down, with its last scrape error.
func LiveTargets(ctx context.Context, get func(ctx context.Context, path string) ([]byte, error), pools []string, timeout time.Duration) (map[string]int, error) {
	deadline := time.Now().Add(timeout)
	for {
		up, problems, err := liveTargets(ctx, get, pools)
		if err == nil && len(problems) == 0 {
			return up, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("after %s, Prometheus's targets could not be read: %w", timeout, err)
			}
			return nil, fmt.Errorf("after %s, Prometheus has no live target in %s", timeout, strings.Join(problems, "; "))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(Poll):
		}
	}
}

func liveTargets(ctx context.Context, get func(ctx context.Context, path string) ([]byte, error), pools []string) (map[string]int, []string, error) {
	raw, err := get(ctx, "/api/v1/targets?state=active")
	if err != nil {
		return nil, nil, err
	}
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Active []struct {
				Pool      string `json:"scrapePool"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.Status != "success" {
		return nil, nil, fmt.Errorf("reading /api/v1/targets: %v (status %q)", err, body.Status)
	}
	up, seen, lastErr := map[string]int{}, map[string]int{}, map[string]string{}
	for _, t := range body.Data.Active {
		seen[t.Pool]++
		if t.Health == "up" {
			up[t.Pool]++
		} else if t.LastError != "" {
			lastErr[t.Pool] = t.LastError
		}
	}
	var problems []string
	for _, p := range pools {
		switch {
		case seen[p] == 0:
			problems = append(problems, p+" (no target: the PodMonitor selects no pod, or Prometheus does not watch its namespace)")
		case up[p] < seen[p]:
			problems = append(problems, fmt.Sprintf("%s (%d of %d targets not up: %s)", p, seen[p]-up[p], seen[p], lastErr[p]))
		}
	}
	return up, problems, nil
}
