package stacks

import (
	"embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
)

// builtin holds the lab's scenario files.
//
//go:embed *.yaml
var builtin embed.FS

// production holds the production-shaped scenarios: pools of tens of pods under thousands of
// connections, a catalog of their own (igwlab suite --catalog production) that only the
// simulated target runs.
//
//go:embed production/*.yaml
var production embed.FS

// ProductionName is the name --catalog takes for the built-in production catalog.
const ProductionName = "production"

// Catalog is an ordered, validated set of scenarios.
type Catalog struct {
	list     []*Scenario
	byName   map[string]*Scenario
	warnings []string
}

// Builtin loads the lab's own scenarios.
func Builtin() (*Catalog, error) {
	cat, err := Load(builtin, ".")
	if err != nil {
		return nil, err
	}
	for _, s := range cat.list {
		s.File = "stacks/" + s.File
	}
	return cat, nil
}

// Production loads the production-shaped scenarios.
func Production() (*Catalog, error) {
	cat, err := Load(production, "production")
	if err != nil {
		return nil, err
	}
	for _, s := range cat.list {
		s.File = "stacks/production/" + path.Base(s.File)
	}
	return cat, nil
}

// LoadDir loads a folder of scenario files from disk.
func LoadDir(dir string) (*Catalog, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--catalog %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--catalog %s: not a directory of scenario files", dir)
	}
	// A user's scenario may name a built-in control; Merge checks it once both are together.
	cat, err := load(os.DirFS(dir), ".", true)
	if err != nil {
		return nil, err
	}
	for _, s := range cat.list {
		s.File = strings.TrimSuffix(dir, "/") + "/" + s.File
	}
	return cat, nil
}

// Merge returns a catalog holding c's scenarios and extra's. A scenario of extra takes the
// place of c's of the same name, and may feed a call in a role one of c's feeds (the run's
// calls are then judged on whichever of the two ran, extra's where both did); each such
// overlap is one of the catalog's Warnings. Two of extra's feeding one role is an error.
func (c *Catalog) Merge(extra *Catalog) (*Catalog, error) {
	out := &Catalog{warnings: append([]string(nil), c.warnings...)}
	layer := 0
	for _, s := range c.list {
		layer = max(layer, s.layer)
	}
	for _, s := range c.list {
		if mine, ok := extra.byName[s.Name]; ok {
			out.warnings = append(out.warnings, fmt.Sprintf("%s: scenario %s takes the place of the one in %s, in this run and in its calls", mine.File, s.Name, s.File))
			continue
		}
		out.add(s)
	}
	for _, s := range extra.list {
		s.layer = layer + 1
		out.add(s)
	}
	if errs := append(out.checkControls(false), out.checkFeeds()...); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out.sort()
	return out, nil
}

// Warnings says where the catalog's own scenarios were replaced or share a role (Merge).
func (c *Catalog) Warnings() []string { return append([]string(nil), c.warnings...) }

func (c *Catalog) add(s *Scenario) {
	if c.byName == nil {
		c.byName = map[string]*Scenario{}
	}
	c.list = append(c.list, s)
	c.byName[s.Name] = s
}

func (c *Catalog) sort() {
	sort.SliceStable(c.list, func(i, j int) bool {
		if c.list[i].Order != c.list[j].Order {
			return c.list[i].Order < c.list[j].Order
		}
		return c.list[i].Name < c.list[j].Name
	})
}

// All returns the scenarios in run order.
func (c *Catalog) All() []*Scenario { return append([]*Scenario(nil), c.list...) }

// Names returns the scenario names in run order.
func (c *Catalog) Names() []string {
	out := make([]string, len(c.list))
	for i, s := range c.list {
		out[i] = s.Name
	}
	return out
}

// Get returns the named scenario.
func (c *Catalog) Get(name string) (*Scenario, bool) {
	s, ok := c.byName[name]
	return s, ok
}

// MustGet returns the named scenario or an error listing the valid names.
func (c *Catalog) MustGet(name string) (*Scenario, error) {
	if s, ok := c.byName[name]; ok {
		return s, nil
	}
	msg := fmt.Sprintf("unknown scenario %q", name)
	if s := suggest(name, c.Names()); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return nil, fmt.Errorf("%s (valid: %s)", msg, strings.Join(c.Names(), ", "))
}

// IsControl reports whether some scenario names s as its control.
func (c *Catalog) IsControl(name string) bool { return c.Controlled(name) != "" }

// Controlled is the scenario that names name as its control ("": none), the one to select to
// run the control.
func (c *Catalog) Controlled(name string) string {
	for _, s := range c.list {
		if s.Control == name {
			return s.Name
		}
	}
	return ""
}

// Optional says whether a default run leaves the scenario out: it is optional, or the control
// of an optional scenario.
func (c *Catalog) Optional(name string) bool {
	if s, ok := c.byName[name]; ok && s.Optional {
		return true
	}
	for _, s := range c.list {
		if s.Optional && s.Control == name {
			return true
		}
	}
	return false
}

// Select returns the scenarios to run, in run order: all but the optional ones, or those named
// in only, minus those in skip. A scenario with a control always brings its control along, run right
// before it, and a control is only run with the scenario it controls.
func (c *Catalog) Select(only, skip []string) ([]*Scenario, error) {
	want := map[string]bool{}
	for _, n := range only {
		if _, err := c.MustGet(n); err != nil {
			return nil, fmt.Errorf("--only: %w", err)
		}
		want[n] = true
	}
	drop := map[string]bool{}
	for _, n := range skip {
		if _, err := c.MustGet(n); err != nil {
			return nil, fmt.Errorf("--skip: %w", err)
		}
		drop[n] = true
	}
	var out []*Scenario
	for _, s := range c.list {
		if drop[s.Name] || (len(only) > 0 && !want[s.Name]) || (len(only) == 0 && s.Optional) {
			continue
		}
		if c.IsControl(s.Name) {
			continue // placed right before the scenario it controls
		}
		if s.Control != "" {
			out = append(out, c.byName[s.Control])
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		for _, n := range only {
			if s := c.Controlled(n); s != "" && !drop[s] {
				return nil, fmt.Errorf("--only %s: a control runs only right before the scenario it controls; --only %s runs both", n, s)
			}
		}
		return nil, fmt.Errorf("--only/--skip select no scenario (catalog: %s)", strings.Join(c.Names(), ", "))
	}
	return out, nil
}

// Feeds maps each call of the evaluation to its roles and, for each role, the scenario that
// feeds it (from the scenarios' feeds).
type Feeds map[string]map[string]string

// Scenario returns the scenario that feeds call in role, or "".
func (f Feeds) Scenario(call, role string) string { return f[call][role] }

// Feeds returns who feeds which call in which role: where two scenarios feed one role, the
// one merged in last (a user's over the built-in one).
func (c *Catalog) Feeds() Feeds { return c.FeedsIn(func(string) bool { return false }) }

// FeedsIn is Feeds for a run: a role two scenarios feed goes to the one that ran (the one
// merged in last where both did or neither did).
func (c *Catalog) FeedsIn(ran func(name string) bool) Feeds {
	best := map[Feed]*Scenario{}
	before := func(s, prev *Scenario) bool { // s fills the role rather than prev
		if sr, pr := ran(s.Name), ran(prev.Name); sr != pr {
			return sr
		}
		return s.layer > prev.layer
	}
	for _, s := range c.list {
		for _, f := range s.Feeds {
			if prev, ok := best[f]; !ok || before(s, prev) {
				best[f] = s
			}
		}
	}
	out := Feeds{}
	for f, s := range best {
		if out[f.Call] == nil {
			out[f.Call] = map[string]string{}
		}
		out[f.Call][f.Role] = s.Name
	}
	return out
}

// checkFeeds refuses two scenarios of one layer (one folder, or the built-in catalog) feeding
// one call in the same role: nothing would say which of them the call is judged on. A scenario
// merged in later may feed a role an earlier one feeds; that is a warning.
func (c *Catalog) checkFeeds() []error {
	var errs []error
	seen := map[Feed][]*Scenario{}
	for _, s := range c.list {
		for _, f := range s.Feeds {
			for _, prev := range seen[f] {
				if prev.layer == s.layer {
					errs = append(errs, &FieldError{File: s.File, Field: "feeds", Msg: fmt.Sprintf("call %q role %q is already fed by %s (%s)", f.Call, f.Role, prev.Name, prev.File)})
				}
			}
			seen[f] = append(seen[f], s)
		}
	}
	for _, f := range slices.SortedFunc(maps.Keys(seen), func(a, b Feed) int { return strings.Compare(a.Call+"\x00"+a.Role, b.Call+"\x00"+b.Role) }) {
		ss := slices.SortedStableFunc(slices.Values(seen[f]), func(a, b *Scenario) int { return a.layer - b.layer })
		for i := 1; i < len(ss); i++ {
			if old, mine := ss[i-1], ss[i]; old.layer != mine.layer {
				c.warnings = append(c.warnings, fmt.Sprintf("%s: scenario %s feeds call %s as %s, as %s (%s) does: the call is judged on whichever of them ran, on %s where both did", mine.File, mine.Name, f.Call, f.Role, old.Name, old.File, mine.Name))
			}
		}
	}
	return errs
}

// DefaultScenario is the scenario a lab stack runs when its config names none: the trigger of
// the mechanism, few long-lived connections and no stream cap.
const DefaultScenario = "02-trigger"
