package fsm_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/crux-sim/crux-sim/internal/fsm"
)

var errState = errors.New("not now")

var door = fsm.Table[string, string]{Name: "door", Sentinel: errState, Moves: map[fsm.Edge[string, string]]string{
	{From: "closed", On: "open"}: "open",
	{From: "open", On: "close"}:  "closed",
	{From: "open", On: "wedge"}:  "open",
}}

func TestAMoveTheTableHasIsTaken(t *testing.T) {
	if to, err := door.Next("closed", "open"); err != nil || to != "open" {
		t.Fatalf("open on closed: %q, %v", to, err)
	}
}

func TestAMoveTheTableLacksIsRefusedLoudlyAndChangesNothing(t *testing.T) {
	to, err := door.Next("closed", "close")
	var illegal *fsm.Illegal[string, string]
	if !errors.As(err, &illegal) || illegal.From != "closed" || illegal.On != "close" {
		t.Fatalf("want an *Illegal for close on closed, got %v", err)
	}
	if to != "closed" {
		t.Errorf("a refused move left the state %q", to)
	}
	if err.Error() != "illegal door transition: close on closed" {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, errState) {
		t.Error("a refusal matches the table's sentinel")
	}
}

func TestLegalReadsTheTable(t *testing.T) {
	if !door.Legal("open", "open") || !door.Legal("open", "closed") || door.Legal("closed", "closed") {
		t.Error("Legal disagrees with the table")
	}
}

func TestReachableFollowsMovesThroughTheStatesBetween(t *testing.T) {
	chain := fsm.Table[string, string]{Name: "chain", Moves: map[fsm.Edge[string, string]]string{
		{From: "queued", On: "start"}: "running",
		{From: "running", On: "end"}:  "done",
	}}
	if chain.Legal("queued", "done") || !chain.Reachable("queued", "done") {
		t.Error("queued reaches done through running, in two moves, not one")
	}
	if chain.Reachable("done", "queued") || chain.Reachable("running", "queued") {
		t.Error("no move leads back")
	}
	if !chain.Reachable("done", "done") {
		t.Error("a state reaches itself")
	}
}

// legalByReading and reachableByReading are Legal and Reachable as their
// docs define them, read from the table's moves at each ask.
func legalByReading(t *fsm.Table[int, int], from, to int) bool {
	for edge, next := range t.Moves {
		if edge.From == from && next == to {
			return true
		}
	}
	return false
}

func reachableByReading(t *fsm.Table[int, int], from, to int) bool {
	seen := map[int]bool{from: true}
	frontier := []int{from}
	for len(frontier) > 0 {
		s := frontier[0]
		frontier = frontier[1:]
		if s == to {
			return true
		}
		for edge, next := range t.Moves {
			if edge.From == s && !seen[next] {
				seen[next] = true
				frontier = append(frontier, next)
			}
		}
	}
	return false
}

// Legal and Reachable, worked out once from the moves, answer as reading
// the moves at each ask would, for every pair of states of random tables
// (states with no move among them, and asked of states no move names).
func TestLegalAndReachableAnswerAsReadingTheMovesWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		states, events := 1+rng.IntN(7), 1+rng.IntN(3)
		table := &fsm.Table[int, int]{Name: "random", Moves: map[fsm.Edge[int, int]]int{}}
		for range rng.IntN(states * events * 2) {
			table.Moves[fsm.Edge[int, int]{From: rng.IntN(states), On: rng.IntN(events)}] = rng.IntN(states)
		}
		for from := -1; from <= states; from++ {
			for to := -1; to <= states; to++ {
				if got, want := table.Legal(from, to), legalByReading(table, from, to); got != want {
					t.Fatalf("%v: Legal(%d, %d) = %t, want %t", table.Moves, from, to, got, want)
				}
				if got, want := table.Reachable(from, to), reachableByReading(table, from, to); got != want {
					t.Fatalf("%v: Reachable(%d, %d) = %t, want %t", table.Moves, from, to, got, want)
				}
			}
		}
	}
}
