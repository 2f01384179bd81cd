package store

import "fmt"

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

type taskEdge struct {
	from TaskState
	on   TaskEvent
}

// taskTransitions is the whole task lifecycle. Keep it the only place that
// says which state follows which.
var taskTransitions = map[taskEdge]TaskState{
	{TaskTodo, TaskPromote}: TaskReady,
	{TaskTodo, TaskCancel}:  TaskCancelled,

	{TaskReady, TaskClaim}:  TaskRunning,
	{TaskReady, TaskCancel}: TaskCancelled,

	{TaskRunning, TaskComplete}: TaskDone,
	{TaskRunning, TaskBlock}:    TaskBlocked,
	{TaskRunning, TaskRetry}:    TaskReady,
	{TaskRunning, TaskGiveUp}:   TaskFailed,
	{TaskRunning, TaskCancel}:   TaskCancelled,

	{TaskBlocked, TaskUnblock}: TaskReady,
	{TaskBlocked, TaskCancel}:  TaskCancelled,
}

// IllegalTaskTransitionError is an event the task lifecycle does not allow
// in the task's state. It is an ErrState.
type IllegalTaskTransitionError struct {
	From TaskState
	On   TaskEvent
}

func (e *IllegalTaskTransitionError) Error() string {
	return fmt.Sprintf("illegal task transition: %s on %s", e.On, e.From)
}

// Is makes the error match ErrState, which callers branch on.
func (e *IllegalTaskTransitionError) Is(target error) bool { return target == ErrState }

// NextTask returns the state that follows s on e, or an
// *IllegalTaskTransitionError (and s).
func NextTask(s TaskState, e TaskEvent) (TaskState, error) {
	if to, ok := taskTransitions[taskEdge{s, e}]; ok {
		return to, nil
	}
	return s, &IllegalTaskTransitionError{From: s, On: e}
}

// Target is the state e leads to, from whichever state allows it: each
// event of the task lifecycle has one.
func (e TaskEvent) Target() TaskState {
	for edge, to := range taskTransitions {
		if edge.on == e {
			return to
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
