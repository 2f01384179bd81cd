package fewmap

import (
	"fmt"
	"maps"
	"testing"
)

// A Map reads back what was set, past the keys its list holds too, and
// keeps the list's keys without allocating.
func TestAMapHoldsEveryKeyItWasGivenAndTheFirstEightWithoutAllocating(t *testing.T) {
	var m Map[int]
	want := map[string]int{}
	for i := range 12 {
		k := fmt.Sprint("k", i)
		m.Set(k, i)
		m.Set(k, i*10) // a second Set replaces the value
		want[k] = i * 10
	}
	if m.Len() != len(want) {
		t.Fatalf("Len() = %d, want %d", m.Len(), len(want))
	}
	got := maps.Collect(m.All)
	if !maps.Equal(got, want) {
		t.Fatalf("All yields %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := m.Get(k); !ok || g != v {
			t.Errorf("Get(%q) = %d, %v; want %d, true", k, g, ok, v)
		}
	}
	if _, ok := m.Get("absent"); ok {
		t.Error("Get of a key never set reports a value")
	}
	var few Map[int]
	if n := testing.AllocsPerRun(20, func() {
		for i, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			few.Set(k, i)
			few.Get(k)
		}
	}); n != 0 {
		t.Errorf("eight keys allocate %v times, want 0", n)
	}
}
