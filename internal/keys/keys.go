// Package keys lists a map's keys in order. slices.Sorted(maps.Keys(m))
// does the same in three or more allocations (the iterator, then a slice
// grown key by key); Sorted does it in one, which counts on paths that run
// once per simulated run.
package keys

import (
	"cmp"
	"slices"
)

// Sorted returns the keys of m in ascending order, in one allocation.
func Sorted[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
