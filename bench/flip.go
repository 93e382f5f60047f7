package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// FlipResult times scenario flips through the Automation API: the program in-process, the real
// Pulumi CLI and Kubernetes provider rendering to a folder, a local file backend.
type FlipResult struct {
	Setup    string             `json:"setup"`
	FirstUpS float64            `json:"first_up_s"`
	Flips    map[string]float64 `json:"flips_s"` // "from -> to": SetConfig until Up returned
	MedianS  float64            `json:"median_s"`
	MaxS     float64            `json:"max_s"`
}

// flipOrder is the sequence of scenarios a flip benchmark switches through: no knob, a stream
// cap, count and time rotation, a listener-level change (exact_balance replaces the listener)
// and back, named by the calls they feed and their roles there.
var flipOrder = func() []string {
	cat, err := stacks.Builtin()
	if err != nil {
		panic(err) // the built-in catalog is checked by its own tests
	}
	f := cat.Feeds()
	return []string{f.Scenario("H-A", "baseline"), f.Scenario("H-A", "trigger"), f.Scenario("H-B h2dial", "capped"),
		f.Scenario("H-C h2dial", "rotated"), f.Scenario("S10", "rotation"), f.Scenario("H-E", "balanced"), f.Scenario("H-A", "trigger")}
}()

func flipBench(ctx context.Context, o Options, progress io.Writer) (*FlipResult, error) {
	tmp, err := os.MkdirTemp("", "igwlab-bench-flip-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, d := range []string{"home", "state", "render"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return nil, err
		}
	}
	path := o.PulumiBin + string(os.PathListSeparator) + os.Getenv("PATH")
	// The Automation API finds the CLI on this process's PATH; render mode refuses a kubeconfig.
	restore := setenv(map[string]string{"PATH": path, "KUBECONFIG": ""})
	defer restore()
	st, err := pulumistack.Open(ctx, pulumistack.Options{Name: "igwlab-bench-flip", Inline: true, InlineDir: filepath.Join(tmp, "work"), Env: map[string]string{
		"PATH": path, "PULUMI_HOME": filepath.Join(tmp, "home"), "PULUMI_BACKEND_URL": "file://" + filepath.Join(tmp, "state"),
		"PULUMI_CONFIG_PASSPHRASE": "", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true", "KUBECONFIG": "",
	}})
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]string{configkey.Cluster: infra.ClusterExisting, configkey.RenderDir: filepath.Join(tmp, "render"),
		configkey.InstallUpstream: "false", configkey.BuildImages: "false", configkey.Monitoring: "false", configkey.Scenario: flipOrder[0]} {
		if err := st.SetConfig(ctx, configkey.Full(k), v, false); err != nil {
			return nil, err
		}
	}
	res := &FlipResult{Flips: map[string]float64{},
		Setup: "inline program, Pulumi CLI and Kubernetes provider in render mode, local file backend; each flip is SetConfig(igwlab:scenario) then Up"}
	fmt.Fprintf(progress, "flip: first up (%s)\n", flipOrder[0])
	t0 := time.Now()
	if _, err := st.Up(ctx, io.Discard); err != nil {
		return nil, fmt.Errorf("first up: %w", err)
	}
	res.FirstUpS = time.Since(t0).Seconds()
	var ds []float64
	for i := 1; i < len(flipOrder); i++ {
		from, to := flipOrder[i-1], flipOrder[i]
		fmt.Fprintf(progress, "flip: %s -> %s\n", from, to)
		t0 := time.Now()
		if err := st.SetConfig(ctx, "igwlab:scenario", to, false); err != nil {
			return nil, err
		}
		if _, err := st.Up(ctx, io.Discard); err != nil {
			return nil, fmt.Errorf("flip to %s: %w", to, err)
		}
		d := time.Since(t0).Seconds()
		res.Flips[from+" -> "+to] = d
		ds = append(ds, d)
		res.MaxS = max(res.MaxS, d)
	}
	res.MedianS = medianOf(ds)
	return res, nil
}

// setenv sets variables in this process and returns a function that puts them back.
func setenv(vars map[string]string) func() {
	old := map[string]*string{}
	for k, v := range vars {
		if prev, ok := os.LookupEnv(k); ok {
			old[k] = &prev
		} else {
			old[k] = nil
		}
		os.Setenv(k, v)
	}
	return func() {
		for k, v := range old {
			if v == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *v)
			}
		}
	}
}
