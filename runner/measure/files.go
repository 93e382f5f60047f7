// Package measure reads a gateway pool while a client runs: every pod's Envoy admin with
// retries, a once-a-second sampler and its time series, and the result files of one run.
package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/igwlab/igwlab/internal/atomicfile"
)

// writeFile writes data atomically, so an interrupted run never leaves a half-written result.
func WriteFile(path string, data []byte) error { return atomicfile.Write(path, data) }

func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(b, '\n'))
}

// writePerPod writes "<pod> <value>" lines, the lab's per-pod file format.
func WritePerPod(path string, vals map[string]float64) error {
	names := slices.Sorted(maps.Keys(vals))
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, num(vals[n]))
	}
	return WriteFile(path, []byte(b.String()))
}

// num prints a number the way the per-pod files always have: integers without decimals.
func num(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.6g", v)
}

// errs collects write errors so one failed file does not stop the others.
type Errs []error

func (e *Errs) Add(err error) {
	if err != nil {
		*e = append(*e, err)
	}
}

// err joins the collected errors, each still reachable by errors.Is and errors.As.
func (e Errs) Err() error {
	if len(e) == 0 {
		return nil
	}
	return fmt.Errorf("writing results: %w", errors.Join(e...))
}
