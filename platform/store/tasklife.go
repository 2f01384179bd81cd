package store

import (
	"fmt"

	"github.com/crux-sim/crux-sim/internal/fsm"
)

// TaskEvent is something that happens to a durable task. The task
// lifecycle is a pure state machine: every legal move is one entry of
// taskTransitions, and nothing else says which state follows which. Both
// stores move their rows through [NextTask], and the harness's platform
// invariant checks a run's task events against it.
//
//	todo ──promote (every parent done)──▶ ready ──claim──▶ running ──complete──▶ done
//	                                        ▲                │ ──block──▶ blocked ──unblock──▶ ready
//	                                        └──retry─────────┤ (crash/timeout/error, attempts left)
//	                                                         └──give up (max consecutive)──▶ failed
//	todo, ready, running, blocked ──cancel──▶ cancelled
//
// A task is created todo, or ready when every parent is done already
// ([CreatedState]). A todo task whose parent is failed or cancelled stays
// todo: nothing promotes it. Done, failed and cancelled are terminal.
type TaskEvent uint8

// The events of the task lifecycle.
const (
	// TaskPromote: every parent of a todo task is done.
	TaskPromote TaskEvent = iota + 1
	// TaskClaim: a dispatcher took a ready task and opened an attempt.
	TaskClaim
	// TaskComplete: the attempt reported worker_complete.
	TaskComplete
	// TaskBlock: the attempt reported worker_block.
	TaskBlock
	// TaskUnblock: the spawner resumed a blocked task.
	TaskUnblock
	// TaskRetry: the attempt crashed, timed out or errored, with attempts
	// left.
	TaskRetry
	// TaskGiveUp: the attempt was the last of MaxAttempts consecutive
	// failures.
	TaskGiveUp
	// TaskCancel: the spawner cancelled the task.
	TaskCancel
)

var taskEventNames = [...]string{"", "promote", "claim", "complete", "block", "unblock", "retry", "give up", "cancel"}

func (e TaskEvent) String() string {
	if e != 0 && int(e) < len(taskEventNames) {
		return taskEventNames[e]
	}
	return fmt.Sprintf("task event(%d)", uint8(e))
}

// taskMoves is the whole task lifecycle, event by event: the states an
// event may happen in and the one state it leads to. Keep it the only
// place that says which state follows which.
var taskMoves = []struct {
	on   TaskEvent
	from []TaskState
	to   TaskState
}{
	{TaskPromote, []TaskState{TaskTodo}, TaskReady},
	{TaskClaim, []TaskState{TaskReady}, TaskRunning},
	{TaskComplete, []TaskState{TaskRunning}, TaskDone},
	{TaskBlock, []TaskState{TaskRunning}, TaskBlocked},
	{TaskUnblock, []TaskState{TaskBlocked}, TaskReady},
	{TaskRetry, []TaskState{TaskRunning}, TaskReady},
	{TaskGiveUp, []TaskState{TaskRunning}, TaskFailed},
	{TaskCancel, []TaskState{TaskTodo, TaskReady, TaskRunning, TaskBlocked}, TaskCancelled},
}

// taskTransitions is taskMoves as a table. A refused move is an ErrState.
var taskTransitions = func() *fsm.Table[TaskState, TaskEvent] {
	t := &fsm.Table[TaskState, TaskEvent]{Name: "task", Sentinel: ErrState, Moves: map[fsm.Edge[TaskState, TaskEvent]]TaskState{}}
	for _, m := range taskMoves {
		for _, from := range m.from {
			t.Moves[fsm.Edge[TaskState, TaskEvent]{From: from, On: m.on}] = m.to
		}
	}
	return t
}()

// NextTask returns the state that follows s on e, or s and an error that
// names the refused move and is an ErrState.
func NextTask(s TaskState, e TaskEvent) (TaskState, error) { return taskTransitions.Next(s, e) }

// Target is the state e leads to, from whichever state allows it: each
// event of the task lifecycle has one.
func (e TaskEvent) Target() TaskState {
	for _, m := range taskMoves {
		if m.on == e {
			return m.to
		}
	}
	return ""
}

// CreatedState is the state a new task starts in: ready when every parent
// is done (or it has none), todo otherwise.
func CreatedState(parentsDone bool) TaskState {
	if parentsDone {
		return TaskReady
	}
	return TaskTodo
}

// FinishEvent is the event that ends a running attempt with outcome o,
// when consecutive attempts in a row (this one included) have crashed,
// timed out or errored, out of maxAttempts.
func FinishEvent(o Outcome, consecutive, maxAttempts int) TaskEvent {
	switch {
	case o == OutcomeCompleted:
		return TaskComplete
	case o == OutcomeBlocked:
		return TaskBlock
	case o.Retryable() && consecutive >= maxAttempts:
		return TaskGiveUp
	case o.Retryable():
		return TaskRetry
	default:
		return TaskCancel
	}
}
