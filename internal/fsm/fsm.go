// Package fsm is the shape every lifecycle of crux-sim shares: one table
// of transitions, and a Next that refuses loudly every move the table
// lacks. The Work lifecycle (core/lifecycle) and the durable task lifecycle
// (platform/store) are each one Table; their states, events and rules are
// theirs.
package fsm

import (
	"fmt"
	"sync"
)

// Edge is a state and an event that may happen in it.
type Edge[S, E comparable] struct {
	From S
	On   E
}

// Table is a lifecycle: for each legal edge, the state it leads to.
// Moves must not change once the table has been asked Legal or
// Reachable: their answers are worked out from it once, on the first ask.
type Table[S, E comparable] struct {
	// Name says whose lifecycle it is in errors ("Work", "task").
	Name string
	// Sentinel, when set, is an error every refusal matches with
	// errors.Is, for callers that branch on it.
	Sentinel error
	Moves    map[Edge[S, E]]S

	once   sync.Once
	states []S      // every state a move names, in the order of legal's and reach's rows
	legal  [][]bool // legal[i][j]: some move leads from states[i] to states[j]
	reach  [][]bool // reach[i][j]: some sequence of moves does
}

// Illegal is an event the lifecycle does not allow in a state.
type Illegal[S, E comparable] struct {
	Name     string
	From     S
	On       E
	sentinel error
}

func (e *Illegal[S, E]) Error() string {
	return fmt.Sprintf("illegal %s transition: %v on %v", e.Name, e.On, e.From)
}

// Is matches the table's sentinel error, if it has one.
func (e *Illegal[S, E]) Is(target error) bool { return e.sentinel != nil && target == e.sentinel }

// Next returns the state that follows s on e, or s and an *Illegal.
func (t *Table[S, E]) Next(s S, e E) (S, error) {
	if to, ok := t.Moves[Edge[S, E]{s, e}]; ok {
		return to, nil
	}
	return s, &Illegal[S, E]{Name: t.Name, From: s, On: e, sentinel: t.Sentinel}
}

// Legal reports whether some event moves the machine from one state to
// another (a self-loop counts).
func (t *Table[S, E]) Legal(from, to S) bool {
	t.once.Do(t.index)
	i, j := t.find(from), t.find(to)
	return i >= 0 && j >= 0 && t.legal[i][j]
}

// Reachable reports whether some sequence of events takes the machine from
// one state to another (a state reaches itself). A checker that samples
// states from outside, and so may miss the states in between, asks this
// instead of Legal.
func (t *Table[S, E]) Reachable(from, to S) bool {
	if from == to {
		return true
	}
	t.once.Do(t.index)
	i, j := t.find(from), t.find(to)
	return i >= 0 && j >= 0 && t.reach[i][j]
}

// find is the row of state s, or -1 for a state no move names. A
// lifecycle has a few states, which a loop finds sooner than a hash.
func (t *Table[S, E]) find(s S) int {
	for i, x := range t.states {
		if x == s {
			return i
		}
	}
	return -1
}

// index works out Legal's and Reachable's answers from Moves, once: the
// checkers ask at every transition of every run, and reading the moves
// through for each (a map's range) cost more than the rest of the check.
func (t *Table[S, E]) index() {
	add := func(s S) {
		if t.find(s) < 0 {
			t.states = append(t.states, s)
		}
	}
	for edge, to := range t.Moves {
		add(edge.From)
		add(to)
	}
	n := len(t.states)
	t.legal, t.reach = make([][]bool, n), make([][]bool, n)
	for i := range n {
		t.legal[i], t.reach[i] = make([]bool, n), make([]bool, n)
	}
	for edge, to := range t.Moves {
		t.legal[t.find(edge.From)][t.find(to)] = true
	}
	for i := range n { // each state's reach, breadth first through legal
		reach := t.reach[i]
		reach[i] = true
		frontier := []int{i}
		for len(frontier) > 0 {
			k := frontier[0]
			frontier = frontier[1:]
			for j, ok := range t.legal[k] {
				if ok && !reach[j] {
					reach[j] = true
					frontier = append(frontier, j)
				}
			}
		}
	}
}
