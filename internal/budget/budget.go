// Package budget measures what a piece of code costs, for specs that hold
// a bound to a fixed budget by counting, never by timing.
package budget

import "runtime"

// Allocated returns the bytes f allocates on the heap.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
