// Package pulumistack is the runner's narrow seam over Pulumi's Automation API: set config, preview
// with a diff, up, destroy, cancel. The cluster target and the preview/up commands use this
// interface; tests use a fake, and the integration tests use the real Automation API.
package pulumistack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/stackfile"
)

// Stack is what the runner does with a Pulumi stack.
type Stack interface {
	Name() string
	SetConfig(ctx context.Context, key, value string, secret bool) error
	GetConfig(ctx context.Context, key string) (string, bool, error)
	// AllConfig is every key the stack's config sets, the project's defaults under it and
	// secrets as plain values, read at once: the Pulumi CLI takes about a quarter of a second
	// a call, and the program's config has some fifty keys.
	AllConfig(ctx context.Context) (map[string]string, error)
	RemoveConfig(ctx context.Context, key string) error
	// Up applies the program and returns the stack outputs.
	Up(ctx context.Context, progress io.Writer) (map[string]any, error)
	// Preview shows what an up would change, with Pulumi's diff, after the given config
	// changes (key to value; "" removes the key). The changes go to a temporary copy of the
	// stack's config file, never to the file itself: a preview cannot change what a running
	// suite applies, and a preview that dies leaves nothing behind.
	Preview(ctx context.Context, changes map[string]string, progress io.Writer) (*Preview, error)
	Destroy(ctx context.Context, progress io.Writer) error
	// Cancel stops an operation in flight on the backend.
	Cancel(ctx context.Context) error
	// Outputs returns the last update's outputs (secrets included, as plain values).
	Outputs(ctx context.Context) (map[string]any, error)
	// PendingOperations lists the operations the stack's state records as started and never
	// finished ("create urn:..."): what an update killed mid-flight leaves behind.
	PendingOperations(ctx context.Context) ([]string, error)
	// CLIVersion is the version of the Pulumi CLI that runs the stack's operations.
	CLIVersion(ctx context.Context) (string, error)
}

// Preview is a preview's result.
type Preview struct {
	Diff    string         // Pulumi's --diff output
	Changes map[string]int // operation -> count ("update": 1, "same": 25)
}

// Options open a stack.
type Options struct {
	Name string
	// Inline runs infra.Program in this process (no language host; the stack's config lives in a
	// workspace of its own, which starts from WorkDir's Pulumi.<name>.yaml when there is one).
	// Otherwise the repository's Pulumi.yaml is used and the stack's config is Pulumi.<name>.yaml
	// next to it, as for `pulumi up -s <name>`.
	Inline bool
	// WorkDir is the repository root (local source).
	WorkDir string
	// InlineDir keeps an inline stack's workspace (and so its config) between runs; empty
	// means a temporary one that is gone when the process ends.
	InlineDir string
	// Env is passed to the Pulumi CLI (PULUMI_BACKEND_URL, PULUMI_CONFIG_PASSPHRASE, PATH, ...).
	Env map[string]string
}

// Open selects the stack, creating it if needed.
func Open(ctx context.Context, o Options) (Stack, error) {
	env := map[string]string{"PULUMI_SKIP_UPDATE_CHECK": "true"}
	for k, v := range o.Env {
		env[k] = v
	}
	if _, ok := env["PULUMI_CONFIG_PASSPHRASE"]; !ok && os.Getenv("PULUMI_CONFIG_PASSPHRASE") == "" && os.Getenv("PULUMI_CONFIG_PASSPHRASE_FILE") == "" {
		env["PULUMI_CONFIG_PASSPHRASE"] = "" // the lab stack's passphrase, unless the user set one
	}
	opts := []auto.LocalWorkspaceOption{auto.EnvVars(env), auto.SecretsProvider("passphrase")}
	var s auto.Stack
	var err error
	if o.Inline {
		dir, derr := inlineWorkspace(o)
		if derr != nil {
			return nil, derr
		}
		if dir != "" {
			opts = append(opts, auto.WorkDir(dir))
		}
		s, err = auto.UpsertStackInlineSource(ctx, o.Name, "igwlab", infra.Program, opts...)
	} else {
		s, err = auto.UpsertStackLocalSource(ctx, o.Name, o.WorkDir, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("opening stack %s: %w", o.Name, explain(err))
	}
	return &autoStack{s: s}, nil
}

type autoStack struct{ s auto.Stack }

func (a *autoStack) Name() string { return a.s.Name() }

func (a *autoStack) SetConfig(ctx context.Context, key, value string, secret bool) error {
	return a.s.SetConfig(ctx, key, auto.ConfigValue{Value: value, Secret: secret})
}

func (a *autoStack) GetConfig(ctx context.Context, key string) (string, bool, error) {
	v, err := a.s.GetConfig(ctx, key)
	if err != nil {
		if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "missing") {
			return "", false, nil
		}
		return "", false, err
	}
	return v.Value, true, nil
}

// AllConfig is one `pulumi config --show-secrets --json`, which lays the project's config under
// the stack's as `pulumi config get` does for one key (listConfig and getConfig both call
// ApplyProjectConfig, pkg/cmd/pulumi/config/config.go).
func (a *autoStack) AllConfig(ctx context.Context) (map[string]string, error) {
	all, err := a.s.GetAllConfig(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(all))
	for k, v := range all {
		out[k] = v.Value
	}
	return out, nil
}

func (a *autoStack) RemoveConfig(ctx context.Context, key string) error {
	return a.s.RemoveConfig(ctx, key)
}

func (a *autoStack) Up(ctx context.Context, progress io.Writer) (map[string]any, error) {
	opts := []optup.Option{}
	if progress != nil {
		opts = append(opts, optup.ProgressStreams(progress))
	}
	res, err := a.s.Up(ctx, opts...)
	if err != nil {
		return nil, explain(err)
	}
	out := map[string]any{}
	for k, v := range res.Outputs {
		out[k] = v.Value
	}
	return out, nil
}

func (a *autoStack) Preview(ctx context.Context, changes map[string]string, progress io.Writer) (*Preview, error) {
	conf, err := a.configCopy()
	if err != nil {
		return nil, err
	}
	defer os.Remove(conf)
	opts := &auto.ConfigOptions{ConfigFile: conf}
	keys := slices.Sorted(maps.Keys(changes))
	for _, k := range keys {
		if v := changes[k]; v != "" {
			err = a.s.SetConfigWithOptions(ctx, k, auto.ConfigValue{Value: v}, opts)
		} else if _, gerr := a.s.GetConfigWithOptions(ctx, k, opts); gerr == nil {
			err = a.s.RemoveConfigWithOptions(ctx, k, opts)
		}
		if err != nil {
			return nil, explain(err)
		}
	}
	var buf bytes.Buffer
	w := io.Writer(&buf)
	if progress != nil {
		w = io.MultiWriter(&buf, progress)
	}
	res, err := a.s.Preview(ctx, optpreview.Diff(), optpreview.ProgressStreams(w), optpreview.ConfigFile(conf))
	if err != nil {
		return nil, explain(err)
	}
	p := &Preview{Diff: buf.String(), Changes: map[string]int{}}
	for op, n := range res.ChangeSummary {
		p.Changes[string(op)] = n
	}
	return p, nil
}

// ConfigFile is where a stack's config lives in a project folder: Pulumi.<stack>.yaml (the
// last part of an org/project/stack name).
func ConfigFile(workDir, stackName string) string { return stackfile.Path(workDir, stackName) }

// configCopy copies the stack's config file (salt, secrets and all) to a temporary file.
func (a *autoStack) configCopy() (string, error) {
	b, err := os.ReadFile(ConfigFile(a.s.Workspace().WorkDir(), a.s.Name()))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	f, err := os.CreateTemp("", "igwlab-preview-*.yaml")
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (a *autoStack) Destroy(ctx context.Context, progress io.Writer) error {
	opts := []optdestroy.Option{}
	if progress != nil {
		opts = append(opts, optdestroy.ProgressStreams(progress))
	}
	_, err := a.s.Destroy(ctx, opts...)
	return explain(err)
}

func (a *autoStack) Cancel(ctx context.Context) error { return a.s.Cancel(ctx) }

func (a *autoStack) PendingOperations(ctx context.Context) ([]string, error) {
	dep, err := a.s.Export(ctx)
	if err != nil {
		return nil, err
	}
	var d apitype.DeploymentV3
	if len(dep.Deployment) > 0 {
		if err := json.Unmarshal(dep.Deployment, &d); err != nil {
			return nil, fmt.Errorf("reading the stack's state: %w", err)
		}
	}
	var out []string
	for _, op := range d.PendingOperations {
		out = append(out, string(op.Type)+" "+string(op.Resource.URN))
	}
	return out, nil
}

func (a *autoStack) Outputs(ctx context.Context) (map[string]any, error) {
	outs, err := a.s.Outputs(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	for k, v := range outs {
		m[k] = v.Value
	}
	return m, nil
}

// explain turns the Automation API's typed failures into advice.
func explain(err error) error {
	switch {
	case err == nil:
		return nil
	case auto.IsConcurrentUpdateError(err):
		return fmt.Errorf("another update of this stack is in progress (if it was interrupted, `pulumi cancel` clears it): %w", err)
	case auto.IsCompilationError(err):
		return fmt.Errorf("the Pulumi program did not compile: %w", err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("cancelled: %w", err)
	}
	return err
}
