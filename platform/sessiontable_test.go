package platform

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// A sessionTable, session-n ids at n and every other id by name, gives
// back what a map keyed by id gives: random sets and gets over ids of
// every shape (numbered ones near and past maxNumbered, leading zeros,
// signs, other prefixes, the empty id) agree with a map at every step.
func TestSessionTableHoldsWhatAMapByIDHolds(t *testing.T) {
	shapes := []func(n int) string{
		func(n int) string { return "session-" + strconv.Itoa(n) },
		func(n int) string { return "session-" + strconv.Itoa(maxNumbered-3+n%6) },
		func(n int) string { return "session-0" + strconv.Itoa(n) },
		func(n int) string { return "session-+" + strconv.Itoa(n) },
		func(n int) string { return "session-" + strconv.Itoa(n) + "x" },
		func(n int) string { return "task-" + strconv.Itoa(n) },
		func(n int) string { return "w_" + strconv.Itoa(n*7919) },
		func(int) string { return "" },
		func(int) string { return "session-" },
	}
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		var tab sessionTable[*session]
		want := map[string]*session{}
		for step := range 300 {
			id := shapes[r.IntN(len(shapes))](r.IntN(64))
			if r.IntN(2) == 0 {
				s := &session{id: id}
				tab.set(id, s)
				want[id] = s
			}
			if got := tab.get(id); got != want[id] {
				t.Fatalf("round %d step %d: get(%q) = %p, want %p", round, step, id, got, want[id])
			}
		}
		for id, s := range want {
			if got := tab.get(id); got != s {
				t.Fatalf("round %d: get(%q) = %p at the end, want %p", round, id, got, s)
			}
		}
	}
}
