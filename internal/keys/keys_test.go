package keys

import (
	"slices"
	"testing"
)

func TestSortedListsEveryKeyInOrderInOneAllocation(t *testing.T) {
	m := map[string]int{"b": 1, "c": 2, "a": 3}
	if got := Sorted(m); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Sorted = %q", got)
	}
	if got := Sorted(map[string]bool(nil)); len(got) != 0 {
		t.Errorf("Sorted(nil) = %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Sorted(m) }); n != 1 {
		t.Errorf("Sorted allocates %v times, want 1", n)
	}
}
