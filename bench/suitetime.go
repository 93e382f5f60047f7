package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/igwlab/igwlab/runner/gateway/local"
)

// SuiteResult is the wall time of `igwlab suite` with its defaults on the local target.
type SuiteResult struct {
	Command         string             `json:"command"`
	WallS           float64            `json:"wall_s"`
	Scenarios       int                `json:"scenarios"`
	ScenarioSeconds map[string]float64 `json:"scenario_seconds"`
	// Order and Status say which scenarios ran: a skipped one (say, a prerequisite the
	// target does not meet) takes no time and must not read as a fast one.
	Order  []string          `json:"order"`
	Status map[string]string `json:"status"`
}

func suiteBench(ctx context.Context, o Options, progress io.Writer) (*SuiteResult, error) {
	out, err := os.MkdirTemp("", "igwlab-bench-suite-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	args := []string{"suite", "--target", string(local.Kind), "-q", "--json", "--out", out}
	fmt.Fprintf(progress, "suite: %s %v\n", o.Igwlab, args)
	cmd := exec.CommandContext(ctx, o.Igwlab, args...)
	cmd.Stderr = progress
	t0 := time.Now()
	raw, err := cmd.Output()
	wall := time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("%s suite: %w", filepath.Base(o.Igwlab), err)
	}
	var sum struct {
		Order           []string           `json:"order"`
		ScenarioSeconds map[string]float64 `json:"scenario_seconds"`
		Scenarios       map[string]struct {
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		return nil, fmt.Errorf("suite summary: %w", err)
	}
	res := &SuiteResult{Command: "igwlab " + strings.Join(args[:3], " "), WallS: wall.Seconds(), Scenarios: len(sum.Order),
		ScenarioSeconds: sum.ScenarioSeconds, Order: sum.Order, Status: map[string]string{}}
	for name, sc := range sum.Scenarios {
		res.Status[name] = sc.Status
		if sc.Reason != "" {
			res.Status[name] += ": " + sc.Reason
		}
	}
	return res, nil
}
