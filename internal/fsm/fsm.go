// Package fsm is the shape every lifecycle of crux-sim shares: one table
// of transitions, and a Next that refuses loudly every move the table
// lacks. The Work lifecycle (core/lifecycle) and the durable task lifecycle
// (platform/store) are each one Table; their states, events and rules are
// theirs.
package fsm

import "fmt"

// Edge is a state and an event that may happen in it.
type Edge[S, E comparable] struct {
	From S
	On   E
}

// Table is a lifecycle: for each legal edge, the state it leads to.
type Table[S, E comparable] struct {
	// Name says whose lifecycle it is in errors ("Work", "task").
	Name string
	// Sentinel, when set, is an error every refusal matches with
	// errors.Is, for callers that branch on it.
	Sentinel error
	Moves    map[Edge[S, E]]S
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
	for edge, next := range t.Moves {
		if edge.From == from && next == to {
			return true
		}
	}
	return false
}

// Reachable reports whether some sequence of events takes the machine from
// one state to another (a state reaches itself). A checker that samples
// states from outside, and so may miss the states in between, asks this
// instead of Legal.
func (t *Table[S, E]) Reachable(from, to S) bool {
	seen := map[S]bool{from: true}
	frontier := []S{from}
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
