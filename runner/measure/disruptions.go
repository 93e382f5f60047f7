package measure

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/gateway"
)

// RecordDisruptions marks a result disturbed when the target saw a pod killed (an OOM kill
// among them) or restarted, or a worker stuck, since a time, and keeps what happened and when in
// dir/disruptions.json. It returns what it found.
func RecordDisruptions(t gateway.Target, since time.Time, res *analysis.Result, dir string, ew *Errs) []gateway.Disruption {
	src, ok := t.(gateway.Disrupted)
	if !ok {
		return nil
	}
	ds := src.Disruptions(since)
	if len(ds) == 0 {
		return nil
	}
	res.Disturbed = true
	for _, d := range ds {
		res.Faults = append(res.Faults, fmt.Sprintf("%s (%.1f s into the scenario): %s %s: %s",
			d.Time.UTC().Format("15:04:05.000"), d.Time.Sub(since).Seconds(), d.Kind, d.Pod, d.Detail))
	}
	ew.Add(WriteJSON(filepath.Join(dir, "disruptions.json"), ds))
	return ds
}
