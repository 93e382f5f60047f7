package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// writeFile writes data atomically: to a temporary file in the same folder, then renamed into
// place, so an interrupted run never leaves a half-written result behind.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'))
}

// writePerPod writes "<pod> <value>" lines, the lab's per-pod file format.
func writePerPod(path string, vals map[string]float64) error {
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, num(vals[n]))
	}
	return writeFile(path, []byte(b.String()))
}

// num prints a number the way the per-pod files always have: integers without decimals.
func num(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.6g", v)
}

// errs collects write errors so one failed file does not stop the others.
type errs []error

func (e *errs) add(err error) {
	if err != nil {
		*e = append(*e, err)
	}
}

func (e errs) err() error {
	if len(e) == 0 {
		return nil
	}
	msgs := make([]string, len(e))
	for i, x := range e {
		msgs[i] = x.Error()
	}
	return fmt.Errorf("writing results: %s", strings.Join(msgs, "; "))
}
