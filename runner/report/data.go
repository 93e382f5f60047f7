package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/internal/atomicfile"
	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/stacks"
)

// Series is a scenario's timeseries.csv.
type Series struct {
	Elapsed []float64
	Pods    []string
	cols    map[string][]float64
}

// Column returns a column by name (nil when absent).
func (s *Series) Column(name string) []float64 { return s.cols[name] }

// ReadSeries reads a timeseries.csv.
func ReadSeries(path string) (*Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Series{cols: map[string][]float64{}}
	if len(rows) == 0 {
		return s, nil
	}
	header := rows[0]
	for _, h := range header {
		if pod, ok := strings.CutPrefix(h, "rps:"); ok {
			s.Pods = append(s.Pods, pod)
		}
	}
	for _, row := range rows[1:] {
		for i, h := range header {
			if i >= len(row) {
				continue
			}
			if row[i] == "" {
				// A pod that did not exist at this sample (it started later, or was gone):
				// NaN keeps the column aligned with elapsed_s, and the plots leave a gap.
				s.cols[h] = append(s.cols[h], math.NaN())
				continue
			}
			v, err := strconv.ParseFloat(row[i], 64)
			if err != nil {
				continue
			}
			s.cols[h] = append(s.cols[h], v)
		}
	}
	s.Elapsed = s.cols["elapsed_s"]
	return s, nil
}

// summary is the part of summary.json the report reads.
type summary struct {
	Target      string                      `json:"target"`
	Pods        int                         `json:"pods"`
	Concurrency int                         `json:"concurrency"`
	Order       []string                    `json:"order"`
	Scenarios   map[string]*analysis.Result `json:"scenarios"`
	Hypotheses  map[string]analysis.Verdict `json:"hypotheses"`
	Feeds       stacks.Feeds                `json:"feeds"`
	Info        struct {
		EnvoyDefaults string  `json:"envoy_defaults"`
		ClientRTTMs   float64 `json:"client_rtt_ms"`
		UpstreamRTTMs float64 `json:"upstream_rtt_ms"`
	} `json:"info"`
}

// Load reads a results folder (summary.json and each scenario's files).
func Load(dir string) (*Run, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not a results folder: %w", dir, err)
	}
	var s summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s/summary.json: %w", dir, err)
	}
	cat, err := stacks.Builtin()
	if err != nil {
		return nil, err
	}
	if len(s.Feeds) == 0 { // a run from before summary.json recorded them
		s.Feeds = cat.Feeds()
	}
	r := &Run{Target: s.Target, Pods: s.Pods, Concurrency: s.Concurrency, Order: s.Order, Scenarios: s.Scenarios,
		Hypotheses: s.Hypotheses, Series: map[string]*Series{}, Teaches: map[string]string{}, Why: map[string]string{},
		Feeds: s.Feeds, InForce: analysis.Header{EnvoyDefaults: s.Info.EnvoyDefaults,
			ClientRTTMs: s.Info.ClientRTTMs, UpstreamRTTMs: s.Info.UpstreamRTTMs}.InForce()}
	for _, id := range append(analysis.CheckIDs(), "stream-cap", "goaway") {
		if v, ok := s.Hypotheses[id]; ok {
			r.Evaluation = append(r.Evaluation, v)
		}
	}
	for _, n := range s.Order {
		sdir := filepath.Join(dir, n)
		if _, err := os.Stat(filepath.Join(sdir, "run-1")); err == nil {
			sdir = filepath.Join(sdir, "run-1") // with --repeat, the first run's time series
		}
		if ts, err := ReadSeries(filepath.Join(sdir, "timeseries.csv")); err == nil {
			r.Series[n] = ts
		}
		var sc struct {
			Teaches string `yaml:"teaches"`
			Why     string `yaml:"local_departures_why"`
		}
		if b, err := os.ReadFile(filepath.Join(sdir, "scenario.yaml")); err == nil && yaml.Unmarshal(b, &sc) == nil {
			r.Teaches[n], r.Why[n] = strings.TrimSpace(sc.Teaches), sc.Why
		}
	}
	return r, nil
}

// Write draws the plots into dir/plots and writes dir/report.html.
func Write(dir string, r *Run) ([]Plot, error) {
	plots, err := Plots(r)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		return nil, err
	}
	for _, p := range plots {
		if err := atomicfile.Write(filepath.Join(dir, "plots", p.Name), p.PNG); err != nil {
			return nil, err
		}
	}
	html, err := HTML(r, plots)
	if err != nil {
		return nil, err
	}
	return plots, atomicfile.Write(filepath.Join(dir, "report.html"), html)
}
