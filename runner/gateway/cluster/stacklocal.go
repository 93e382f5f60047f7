package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/internal/configkey"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/pulumistack"
	"github.com/igwlab/igwlab/stacks"
)

// StackLocal is the local target driven through the Pulumi program: each scenario is set in a
// stack rendering to a folder (no cluster), `pulumi up` renders the EnvoyFilter, and the
// emulated pool takes its knobs from that rendered EnvoyFilter, its filters from the rendered
// RequestAuthentication and the waypoint from the httpbin Service's labels. It shows the
// program and the emulator agree on what every scenario means.
type StackLocal struct {
	*local.Local
	Stack     pulumistack.Stack
	RenderDir string
	Progress  io.Writer
}

// Apply implements Target.
func (s *StackLocal) Apply(ctx context.Context, sc stacks.Scenario) error {
	if err := s.switchStack(ctx, sc); err != nil {
		if ctx.Err() != nil {
			return upInterrupted(s.Stack, sc.Name, err, s.Progress)
		}
		return err
	}
	setup, err := ReadRendered(s.RenderDir)
	if err != nil {
		return err
	}
	s.Pool.Apply(setup)
	return nil
}

// switchStack sets the scenario and its knobs in the stack's config and runs `pulumi up`.
func (s *StackLocal) switchStack(ctx context.Context, sc stacks.Scenario) error {
	// The local run's knobs (the lab's plus any local departure) go to the stack as an
	// override, so the rendered filter is exactly what this run measures.
	b, err := json.Marshal(sc.Knobs)
	if err != nil {
		return err
	}
	if err := s.Stack.SetConfig(ctx, configkey.Full(configkey.Knobs), string(b), false); err != nil {
		return err
	}
	if err := s.Stack.SetConfig(ctx, configkey.Full(configkey.Scenario), sc.Name, false); err != nil {
		return err
	}
	if _, err := s.Stack.Up(ctx, s.Progress); err != nil {
		return fmt.Errorf("pulumi up for %s: %w", sc.Name, err)
	}
	return nil
}

// ReadRendered reads the lab's scenario resources from a render directory: the EnvoyFilter's
// knobs and access log, scenario 11's RequestAuthentication, and the httpbin Service's waypoint
// label.
func ReadRendered(dir string) (emulator.Setup, error) {
	var setup emulator.Setup
	files, err := filepath.Glob(filepath.Join(dir, "1-manifest", "*.yaml"))
	if err != nil || len(files) == 0 {
		return setup, fmt.Errorf("no rendered manifests in %s", dir)
	}
	found := false
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return setup, err
		}
		var obj map[string]any
		if yaml.Unmarshal(raw, &obj) != nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		spec, _ := obj["spec"].(map[string]any)
		switch {
		case obj["kind"] == envoyfilter.Kind && meta["name"] == envoyfilter.DefaultName:
			k, al, err := envoyfilter.Knobs(spec)
			if err != nil {
				return setup, fmt.Errorf("%s: %w", f, err)
			}
			setup.Knobs, setup.Filters.AccessLog, found = k, al, true
		case obj["kind"] == "RequestAuthentication" && meta["name"] == envoyfilter.RequestAuthName:
			rules, _ := spec["jwtRules"].([]any)
			if len(rules) > 0 {
				r, _ := rules[0].(map[string]any)
				setup.Filters.JWT = &stacks.JWT{Mode: "permissive", Issuer: fmt.Sprint(r["issuer"])}
			}
		case obj["kind"] == "Service" && meta["name"] == "httpbin":
			labels, _ := meta["labels"].(map[string]any)
			setup.Waypoint = labels["istio.io/use-waypoint"] == infra.WaypointName
		}
	}
	if !found {
		return setup, fmt.Errorf("no EnvoyFilter %s rendered in %s", envoyfilter.DefaultName, dir)
	}
	return setup, nil
}

var _ gateway.Target = (*StackLocal)(nil)
