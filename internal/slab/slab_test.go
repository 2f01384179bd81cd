package slab

import "testing"

// Values a slab hands out are zero, distinct, and never share room: a
// run taken from it cannot grow into the next one.
func TestASlabHandsOutZeroValuesThatShareNoRoom(t *testing.T) {
	s := Sized[int](2, 4)
	a, b := s.New(), s.New()
	if *a != 0 || *b != 0 || a == b {
		t.Fatalf("New gave %p=%d and %p=%d, want two distinct zeros", a, *a, b, *b)
	}
	*a, *b = 1, 2
	run := s.Take(3)
	if len(run) != 3 || cap(run) != 3 {
		t.Fatalf("Take(3) has len %d cap %d, want 3 and 3", len(run), cap(run))
	}
	next := s.Take(1)
	run = append(run, 9)
	if next[0] != 0 || *a != 1 || *b != 2 {
		t.Fatalf("appending to a run reached other values: next %d, a %d, b %d", next[0], *a, *b)
	}
}

// Chunks double from the first size up to the largest, and Size sets the
// next one: a slab of n values costs a few allocations, not n.
func TestASlabAllocatesAChunkAtATime(t *testing.T) {
	n := testing.AllocsPerRun(10, func() {
		s := Sized[int](4, 16)
		for range 4 + 8 + 16 + 16 {
			s.New()
		}
	})
	if n != 4 {
		t.Errorf("44 values in chunks of 4, 8, 16, 16 took %v allocations, want 4", n)
	}
	n = testing.AllocsPerRun(10, func() {
		var s Slab[int]
		s.Size(100)
		s.Take(100)
	})
	if n != 1 {
		t.Errorf("a slab sized for 100 took %v allocations for 100 values, want 1", n)
	}
}
