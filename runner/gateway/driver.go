package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/igwlab/igwlab/internal/registry"
	"github.com/igwlab/igwlab/runner/emulator"
	"github.com/igwlab/igwlab/stacks"
)

// Kind names a kind of target, as --target takes it.
type Kind string

// Driver is a kind of target: how to open one, and what is known of it before it is open.
// Each kind's package registers its drivers when it is linked in (Register in its init).
type Driver struct {
	Kind Kind
	// Help describes the kind in --target's help.
	Help string
	// Order places the kind in listings (ascending).
	Order int
	// Open starts the target, or connects to it.
	Open func(ctx context.Context, o Options) (Target, error)
	// Resolve is Target.Resolve, known before the target is open (for estimates and plans).
	Resolve func(lab *stacks.Scenario) (stacks.Scenario, []stacks.Departure)
	// Timing is the part of every scenario's time this kind fixes, read from its settings.
	Timing func(o Options) (Timing, error)
	// MaxPods and MaxWorkers bound the pool's --pods and --concurrency on this kind (0: the
	// socket emulator's bounds).
	MaxPods, MaxWorkers int
}

// Options configure a target; each kind reads the part that is its own.
type Options struct {
	// Pool sizes the emulated pool of a local target, and the simulated one.
	Pool emulator.Config
	// Harness gives the simulated target the local target's machine (sim.LocalHarness).
	Harness bool
	// Stack selects the Pulumi stack (and so the cluster) of a target switched through it.
	Stack StackOptions
	// Progress receives progress (Pulumi's, for a stack); nil is quiet.
	Progress io.Writer
}

// StackOptions select a Pulumi stack of the lab.
type StackOptions struct {
	Name string
	// Inline runs the Pulumi program in this process; InlineDir keeps its workspace.
	Inline    bool
	InlineDir string
	// Kubeconfig and Context reach a cluster the stack does not create (default: the stack's
	// own settings).
	Kubeconfig, Context string
}

// Timing is what a kind of target adds to every scenario run: the wait for the gateway's
// drain after each switch, and the workers per pod (scenarios that need more are skipped).
type Timing struct {
	Drain   time.Duration
	Workers int
	// Virtual: the windows run in virtual time, taking only the wall time their simulation
	// takes.
	Virtual bool
	// Source says where the numbers come from.
	Source string
}

var drivers = registry.New[Kind, Driver]("kind of target")

// Register makes a kind of target available to Open. It panics on a second driver of the same
// kind: two packages cannot both own a kind.
func Register(d Driver) { drivers.Register(d.Kind, d) }

// Drivers lists the registered kinds, in Order.
func Drivers() []Driver {
	out := drivers.All()
	slices.SortStableFunc(out, func(a, b Driver) int { return cmp.Compare(a.Order, b.Order) })
	return out
}

// ErrUnknownKind is a kind no driver linked into this program registers.
var ErrUnknownKind = errors.New("unknown kind of target")

// Lookup returns the driver of a kind, or an error wrapping ErrUnknownKind that lists the kinds
// this program has.
func Lookup(kind Kind) (Driver, error) {
	d, ok := drivers.Lookup(kind)
	if !ok {
		return Driver{}, fmt.Errorf("%w %q: allowed %s", ErrUnknownKind, kind, KindList())
	}
	return d, nil
}

// Open starts or connects to a target of the given kind.
func Open(ctx context.Context, kind Kind, o Options) (Target, error) {
	d, err := Lookup(kind)
	if err != nil {
		return nil, err
	}
	return d.Open(ctx, o)
}

// KindList is the registered kinds, comma-separated, in Order.
func KindList() string {
	var names []string
	for _, d := range Drivers() {
		names = append(names, string(d.Kind))
	}
	return strings.Join(names, ", ")
}

// KindHelp describes every registered kind for --target's help: "local (…), k3d (…)".
func KindHelp() string {
	var parts []string
	for _, d := range Drivers() {
		parts = append(parts, fmt.Sprintf("%s (%s)", d.Kind, d.Help))
	}
	return strings.Join(parts, ", ")
}
