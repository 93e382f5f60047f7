// Package registry holds the kinds a program is built with (kinds of target, kinds of load
// client): each kind's package registers itself when it is linked in, and the rest of the
// program looks kinds up by name, never by a switch of its own.
package registry

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Of is a registry of values by kind.
type Of[K cmp.Ordered, V any] struct {
	what  string // what the kinds are, for messages
	mu    sync.Mutex
	kinds map[K]V
}

// New makes a registry of what ("client", "kind of target").
func New[K cmp.Ordered, V any](what string) *Of[K, V] {
	return &Of[K, V]{what: what, kinds: map[K]V{}}
}

// Register adds a kind. It panics on a second registration of one kind: two packages cannot
// both own it.
func (r *Of[K, V]) Register(kind K, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kinds[kind]; dup {
		panic(fmt.Sprintf("%s %v registered twice", r.what, kind))
	}
	r.kinds[kind] = v
}

// Lookup returns a kind's value.
func (r *Of[K, V]) Lookup(kind K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.kinds[kind]
	return v, ok
}

// All returns every registered value, ordered by kind.
func (r *Of[K, V]) All() []V {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]V, 0, len(r.kinds))
	for _, k := range slices.Sorted(maps.Keys(r.kinds)) {
		out = append(out, r.kinds[k])
	}
	return out
}

// Kinds lists the registered kinds, sorted.
func (r *Of[K, V]) Kinds() []K {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.kinds))
}
