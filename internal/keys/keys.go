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
	return AppendSorted(make([]K, 0, len(m)), m)
}

// AppendSorted appends the keys of m to dst and sorts what it appended,
// so that a caller with room of its own (an array on its stack, for the
// few keys it expects) lists them with no allocation.
func AppendSorted[M ~map[K]V, K cmp.Ordered, V any](dst []K, m M) []K {
	n := len(dst)
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst[n:])
	return dst
}
