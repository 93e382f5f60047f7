package suite

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/runner/gateway"
	"github.com/igwlab/igwlab/runner/gateway/local"
	"github.com/igwlab/igwlab/runner/load"
	"github.com/igwlab/igwlab/stacks"
)

// TestRecipesAddAClientATargetAndAScenario follows docs/architecture.md's recipes with
// everything in this one file: a client (its catalog entry and its registered run), a kind of
// target (a driver of its own, here the emulated pool with a pod count of its own) and a
// scenario (one catalog file using both). The suite opens the target by kind, runs the
// scenario with the client, and analyses it: nothing else had to change.
func TestRecipesAddAClientATargetAndAScenario(t *testing.T) {
	// A client: how the catalog checks it and draws it, and how it runs.
	prevKinds := stacks.ClientKinds
	stacks.ClientKinds = append(append([]stacks.ClientKind(nil), prevKinds...), stacks.ClientKind{Kind: "recipe-client", Shade: "dark"})
	t.Cleanup(func() { stacks.ClientKinds = prevKinds })
	ran := &recipeRuns
	registerOnce(func() {
		load.Register(load.Client{Kind: "recipe-client", Run: func(ctx context.Context, s load.Spec) (*load.Result, error) {
			ran.Add(1)
			s.Kind, s.Mode = "h2dial", "distinct" // a client of its own would drive the target itself
			r, err := load.Run(ctx, s)
			if r != nil {
				r.Client = "recipe-client"
			}
			return r, err
		}})
		// A target: a driver of its own kind.
		gateway.Register(gateway.Driver{Kind: "recipe-target", Help: "a test's", Order: 90,
			Open: func(_ context.Context, o gateway.Options) (gateway.Target, error) {
				o.Pool.Pods = 4
				return local.NewLocal(o.Pool)
			},
			Resolve: local.Resolve,
			Timing:  func(gateway.Options) (gateway.Timing, error) { return gateway.Timing{Workers: 1}, nil }})
	})

	// A scenario: one catalog file.
	dir := t.TempDir()
	const file = `name: 99-recipe
order: 990
title: A client and a target added by the recipes
client:
  kind: recipe-client
  concurrency: 4
  path: /get
load:
  duration: 1s
  settle: 0s
knobs:
  hcm:
    http2_protocol_options:
      max_concurrent_streams: 100
`
	if err := os.WriteFile(filepath.Join(dir, "99-recipe.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	builtin, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	user, err := stacks.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := builtin.Merge(user)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt, err := gateway.Open(ctx, "recipe-target", gateway.Options{Pool: emulator.Config{Workers: 1, Model: emulator.DefaultModel}})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	sum, err := Run(ctx, Options{Target: tgt, Catalog: cat, Only: []string{"99-recipe"}, OutDir: t.TempDir(), NoReport: true, SkipEval: true})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Scenarios["99-recipe"]
	if !r.OK() || r.Client != "recipe-client" || r.Requests == 0 || sum.Pods != 4 || ran.Load() == 0 {
		t.Fatalf("the recipe's scenario: %+v (pods %d, client runs %d)", r, sum.Pods, ran.Load())
	}
	if got := r.Knobs[0]; got.Path != "hcm.http2_protocol_options.max_concurrent_streams" || got.Value != "100" {
		t.Errorf("knobs in force: %+v", r.Knobs)
	}
}

var (
	registered atomic.Bool
	recipeRuns atomic.Int64 // the recipe client's runs, across -count repetitions
)

// registerOnce registers the recipe's client and target once per test binary (-count > 1
// runs the test again; a kind registers once).
func registerOnce(f func()) {
	if registered.CompareAndSwap(false, true) {
		f()
	}
}
