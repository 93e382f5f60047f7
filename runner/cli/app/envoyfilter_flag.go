package app

import (
	"fmt"
	"strings"

	"github.com/igwlab/igwlab/infra/envoyfilter"
	"github.com/igwlab/igwlab/stacks"
)

// EnvoyFilters is --envoyfilter FILE (repeatable): a user's EnvoyFilter read onto the lab's
// gateway (envoyfilter.Import: checked with istio.io/api and Envoy's protos as the lab's own
// are), its knobs held on top of every scenario it runs. A knob two files set to different
// values is an error, as is a file that will not read: nothing runs.
type EnvoyFilters struct {
	Files []*envoyfilter.Imported
	K     stacks.Knobs
	from  map[string]string // knob path: the file that set it
}

func (e *EnvoyFilters) String() string {
	var names []string
	for _, f := range e.Files {
		names = append(names, f.File)
	}
	return strings.Join(names, ",")
}

func (e *EnvoyFilters) Type() string { return "file" }

func (e *EnvoyFilters) Set(path string) error {
	imp, err := envoyfilter.ReadFile(path, envoyfilter.DefaultTarget)
	if err != nil {
		return err
	}
	if e.from == nil {
		e.from = map[string]string{}
	}
	for _, kv := range imp.Knobs.Set() {
		spec, _ := stacks.Lookup(kv.Path)
		if prev, ok := e.from[kv.Path]; ok {
			if v, _ := spec.Get(&e.K); v != kv.Value {
				return fmt.Errorf("%s sets %s=%s and %s sets it to %s: give each knob in one file", path, kv.Path, kv.Value, prev, v)
			}
		}
		e.from[kv.Path] = path
	}
	e.K = e.K.Overlay(imp.Knobs)
	e.Files = append(e.Files, imp)
	return nil
}

// With holds the files' knobs beside --set's: a knob both set is an error naming both.
func (e *EnvoyFilters) With(sets stacks.Knobs) (stacks.Knobs, error) {
	for _, kv := range sets.Set() {
		if f, ok := e.from[kv.Path]; ok {
			return sets, Usagef("%s is set by --set and by --envoyfilter %s: give it once", kv.Path, f)
		}
	}
	return sets.Overlay(e.K), nil
}

// Text says, for progress, what each file set and did not apply.
func (e *EnvoyFilters) Text() string {
	var b strings.Builder
	for _, f := range e.Files {
		fmt.Fprintf(&b, "--envoyfilter %s: sets %s\n", f.File, orNone(f.Sets))
		for _, n := range f.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		for _, n := range f.NotApplied {
			fmt.Fprintf(&b, "  not applied: %s\n", n)
		}
	}
	return b.String()
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "no knob the lab models"
	}
	return strings.Join(xs, ", ")
}
