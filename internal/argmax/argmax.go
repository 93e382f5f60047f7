// Package argmax picks the key of a map's largest value, ties broken by the smallest key, so
// that a pick made from a map (whose order Go randomises) is the same on every run.
package argmax

import "cmp"

// Key returns the key with the largest value among those keep accepts (all when keep is nil),
// the smallest such key on a tie, and false when there is none.
func Key[K, V cmp.Ordered](m map[K]V, keep func(K) bool) (K, bool) {
	var best K
	var bestV V
	found := false
	for k, v := range m {
		if keep != nil && !keep(k) {
			continue
		}
		if !found || v > bestV || (v == bestV && k < best) {
			best, bestV, found = k, v, true
		}
	}
	return best, found
}
