// Package lifecycle is the pure state machine of background Work.
//
// Every legal transition of a Work item is listed in one table, [transitions];
// nothing else in crux-sim changes a Work state. The machine has no clock, no
// locks and no I/O, so the runtime, the simulator's invariant checker and the
// property-based tests all consult the same rules.
//
//	queued ──start──▶ running ──complete──▶ completed
//	   │                 │    ──fail──────▶ failed
//	   │                 └──cancel──▶ cancel-requested ──stop──────▶ cancelled
//	   │                                   │  ──complete──▶ completed (completion wins the race)
//	   │                                   │  ──fail──────▶ failed    (an unrelated failure stays failed)
//	   │                                   └──cancel──▶ cancel-requested (accepted again, no change)
//	   └──cancel──▶ cancelled
//
// A cancel against terminal Work is not an error: it is answered "not
// accepted" and changes nothing. Any other event on a terminal state is
// illegal.
package lifecycle

import (
	"fmt"

	"github.com/crux-sim/crux-sim/internal/fsm"
)

// State is a Work lifecycle state, spelled as the model sees it.
type State string

// The six states of the seed's WorkStatus.state.
const (
	Queued          State = "queued"
	Running         State = "running"
	Completed       State = "completed"
	Failed          State = "failed"
	CancelRequested State = "cancel-requested"
	Cancelled       State = "cancelled"
)

// States lists every state in lifecycle order.
var States = []State{Queued, Running, CancelRequested, Completed, Failed, Cancelled}

// Terminal reports whether no further transition can leave s.
func (s State) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// Valid reports whether s is one of the six states.
func (s State) Valid() bool {
	switch s {
	case Queued, Running, Completed, Failed, CancelRequested, Cancelled:
		return true
	}
	return false
}

// Event is something that happens to a Work item.
type Event uint8

// The events that drive the machine.
const (
	// Start: a concurrency slot was granted and the child begins.
	Start Event = iota + 1
	// Complete: the child produced its final output.
	Complete
	// Fail: the child ended with an error that is not the observed cancellation.
	Fail
	// Cancel: the owner asked for cancellation.
	Cancel
	// Stop: a child with a pending cancel request reached a semantic boundary
	// and stopped.
	Stop
)

var eventNames = [...]string{"", "start", "complete", "fail", "cancel", "stop"}

func (e Event) String() string {
	if int(e) < len(eventNames) && e != 0 {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// Events lists every event.
var Events = []Event{Start, Complete, Fail, Cancel, Stop}

// transitions is the whole lifecycle. Keep it the only place that says which
// state follows which.
var transitions = fsm.Table[State, Event]{Name: "Work", Moves: map[fsm.Edge[State, Event]]State{
	{From: Queued, On: Start}:  Running,
	{From: Queued, On: Cancel}: Cancelled,

	{From: Running, On: Complete}: Completed,
	{From: Running, On: Fail}:     Failed,
	{From: Running, On: Cancel}:   CancelRequested,

	{From: CancelRequested, On: Complete}: Completed,
	{From: CancelRequested, On: Fail}:     Failed,
	{From: CancelRequested, On: Stop}:     Cancelled,
	{From: CancelRequested, On: Cancel}:   CancelRequested,
}}

// IllegalTransitionError reports an event that the lifecycle does not allow
// in the current state.
type IllegalTransitionError = fsm.Illegal[State, Event]

// Next returns the state that follows s on e, or an *IllegalTransitionError.
// A Cancel on a terminal state is reported by [CancelOutcome], not here: for
// Next it is illegal like any other event on a terminal state.
func Next(s State, e Event) (State, error) { return transitions.Next(s, e) }

// Legal reports whether the machine moves from one state to another on some
// event. A self-loop (cancel on cancel-requested) counts as legal.
func Legal(from, to State) bool { return transitions.Legal(from, to) }

// Reachable reports whether some sequence of events takes the machine from
// one state to another (a state reaches itself). A checker that samples
// Work states from outside, and so may miss the states in between, asks
// this instead of Legal.
func Reachable(from, to State) bool { return transitions.Reachable(from, to) }

// CancelOutcome answers a cancel request in state s: whether the request is
// accepted and the state afterwards. Terminal Work is never accepted and does
// not change.
func CancelOutcome(s State) (accepted bool, next State) {
	if s.Terminal() {
		return false, s
	}
	to, err := Next(s, Cancel)
	if err != nil {
		return false, s
	}
	return true, to
}

// Finish returns the event that ends a running child given how its run ended
// and whether cancellation was requested: a child that stopped because it
// observed the cancellation is stopped, any other error is a failure, and a
// child that produced output completed.
func Finish(s State, produced bool, stoppedByCancel bool) Event {
	switch {
	case produced:
		return Complete
	case stoppedByCancel && s == CancelRequested:
		return Stop
	default:
		return Fail
	}
}
