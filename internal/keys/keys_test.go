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

func TestAppendSortedSortsOnlyWhatItAppendsAndUsesTheRoomItIsGiven(t *testing.T) {
	m := map[string]int{"b": 1, "c": 2, "a": 3}
	var room [4]string
	got := AppendSorted(append(room[:0], "z"), m)
	if !slices.Equal(got, []string{"z", "a", "b", "c"}) {
		t.Errorf("AppendSorted = %q", got)
	}
	if &got[0] != &room[0] {
		t.Error("AppendSorted left the room it was given")
	}
	if n := testing.AllocsPerRun(100, func() {
		var room [4]string
		_ = AppendSorted(room[:0], m)
	}); n != 0 {
		t.Errorf("AppendSorted into room enough allocates %v times, want 0", n)
	}
}
