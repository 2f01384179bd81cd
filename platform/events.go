package platform

import (
	"encoding/json"
	"time"

	"github.com/crux-sim/crux-sim/platform/store"
)

// EventType names a platform event. The dotted names are the seed's own
// (worker.complete, delegation.stale, task.blocked, loop.result, ...); the
// rest are crux-sim's, so that a trace can show everything that happened.
type EventType string

// Session events (on the session's own log).
const (
	// EventSessionCreated opens every session's log.
	EventSessionCreated EventType = "session.created"
	// EventUserMessage: a message entered the session's queue (Text).
	EventUserMessage EventType = "user.message"
	// EventTurnStart: a turn began (Turn).
	EventTurnStart EventType = "turn.start"
	// EventTurnEnd: a turn ended; Status is ok, error or interrupted, Text
	// the final output, Error the failure.
	EventTurnEnd EventType = "turn.end"
	// EventSessionState: the session changed state (Status).
	EventSessionState EventType = "session.state"
	// EventSessionRestored: RestoreSession reopened a root session of a
	// crashed process under its old id (Agent, Channel).
	EventSessionRestored EventType = "session.restored"
)

// Worker events (on the parent's log, except worker.message).
const (
	// EventWorkerSpawned: spawn_worker started Child.
	EventWorkerSpawned EventType = "worker.spawned"
	// EventWorkerComplete: a worker's run finished (Status completed or
	// failed, Text its final response); with Task set, a task attempt
	// completed (Text the summary, Metadata worker_complete's metadata).
	EventWorkerComplete EventType = "worker.complete"
	// EventWorkerMessage: send_worker_message queued Text for Child (on
	// both logs).
	EventWorkerMessage EventType = "worker.message"
	// EventWorkerStopped: stop_worker interrupted Child.
	EventWorkerStopped EventType = "worker.stopped"
)

// Delegation events (on the delegating parent's log).
const (
	EventDelegationStart    EventType = "delegation.start"
	EventDelegationComplete EventType = "delegation.complete"
	// EventDelegationFailed: Status error, timeout or interrupted.
	EventDelegationFailed EventType = "delegation.failed"
	// EventDelegationStale: Child has been idle for the stale threshold;
	// emitted at most once per child.
	EventDelegationStale EventType = "delegation.stale"
)

// Task events (on the spawner's log).
const (
	EventTaskCreated   EventType = "task.created"
	EventTaskStarted   EventType = "task.started"
	EventTaskBlocked   EventType = "task.blocked"
	EventTaskUnblocked EventType = "task.unblocked"
	// EventTaskRetry: an attempt crashed, timed out or failed and the task
	// is ready again (Attempt, Status the outcome).
	EventTaskRetry     EventType = "task.retry"
	EventTaskFailed    EventType = "task.failed"
	EventTaskCancelled EventType = "task.cancelled"
	// EventTaskPromoted: every parent of Task is done; it is ready.
	EventTaskPromoted EventType = "task.promoted"
	// EventTaskStranded: nothing will ever move Task again, and it stays
	// where it is (Status, the StrandedReason): a todo task whose parent
	// (Other) failed or was cancelled is never promoted, and a blocked
	// task whose spawner can no longer act is never unblocked. It is on
	// the spawner's log and is also a finding.
	EventTaskStranded EventType = "task.stranded"
)

// taskEvents are the task lifecycle's moves that the task events report.
var taskEvents = map[EventType]store.TaskEvent{
	EventTaskPromoted:   store.TaskPromote,
	EventTaskStarted:    store.TaskClaim,
	EventTaskBlocked:    store.TaskBlock,
	EventTaskUnblocked:  store.TaskUnblock,
	EventTaskRetry:      store.TaskRetry,
	EventTaskFailed:     store.TaskGiveUp,
	EventWorkerComplete: store.TaskComplete,
	EventTaskCancelled:  store.TaskCancel,
}

// TaskEvent says which move of the task lifecycle ([store.NextTask]) an
// event about a task reports: task.started is a claim, task.failed gives
// up, a worker.complete that carries a task id completes it. Task creation
// (task.created) is no move: a task is created in [store.CreatedState].
func (t EventType) TaskEvent() (store.TaskEvent, bool) {
	e, ok := taskEvents[t]
	return e, ok
}

// Workspace, artifacts, inbox and board events.
const (
	// EventWorkspaceOverwrite is a finding on the root's log: Child wrote
	// Path over Other's version (Siblings when they share a parent).
	EventWorkspaceOverwrite EventType = "workspace.overwrite"
	// EventArtifact: an artifact was created (Child is its creator when it
	// was propagated up from a delegated child).
	EventArtifact EventType = "artifact.created"
	// EventInboxQuestion: ask_user_question added an inbox item (Item).
	EventInboxQuestion EventType = "inbox.question"
	EventInboxAnswered EventType = "inbox.answered"
	// EventInboxExpired: the inbox sweeper marked Item non-actionable.
	EventInboxExpired EventType = "inbox.expired"
	// EventBoardClaimExpired and EventBoardNotePurged are the board
	// sweeper's work, on the root's log.
	EventBoardClaimExpired EventType = "board.claim_expired"
	EventBoardNotePurged   EventType = "board.note_purged"
	// EventWorkspaceDeleted: the workspace sweeper deleted an orphaned
	// prefix (platform log).
	EventWorkspaceDeleted EventType = "workspace.deleted"
	// EventTrainingExport: the training collector wrote Path.
	EventTrainingExport EventType = "training.export"
)

// Schedule and loop events (on the origin session's log).
const (
	EventScheduleCreated EventType = "schedule.created"
	// EventScheduleFired: a run of Schedule started on session Child.
	EventScheduleFired EventType = "schedule.fired"
	// EventScheduleCompleted: Status is the reason: loop_complete,
	// completed (loop_wait completed: true), expired, once.
	EventScheduleCompleted EventType = "schedule.completed"
	EventScheduleDeleted   EventType = "schedule.deleted"
	// EventLoopResult: a web/API-origin run's final answer (Text). It is
	// never added to the origin's history and never wakes it.
	EventLoopResult EventType = "loop.result"
	// EventChannelPost: a channel-origin run posted Text to Channel.
	EventChannelPost EventType = "channel.post"
	// EventSchedulerLeader: this process (Text, its instance) took the
	// scheduled-work ticker's leader lease, which another process held or
	// nobody did (platform log).
	EventSchedulerLeader EventType = "scheduler.leader"
)

// Event is one entry of a session's event log. Which fields are set
// depends on Type; see the constants.
type Event struct {
	// Seq orders every event of a platform.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Session is the log the event is on; empty for the platform log.
	Session string    `json:"session,omitempty"`
	Type    EventType `json:"type"`

	Child    string `json:"child,omitempty"`
	Other    string `json:"other,omitempty"`
	Task     string `json:"task,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Schedule string `json:"schedule,omitempty"`
	Item     string `json:"item,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Kind     Kind   `json:"kind,omitempty"`
	Turn     int    `json:"turn,omitempty"`
	Goal     string `json:"goal,omitempty"`
	Status   string `json:"status,omitempty"`
	Channel  string `json:"channel,omitempty"`
	Path     string `json:"path,omitempty"`
	Siblings bool   `json:"siblings,omitempty"`
	Text     string `json:"text,omitempty"`
	Error    string `json:"error,omitempty"`
	// From is set on an event another process emitted for this session
	// while it was not live there, and this process delivered from the
	// session's mailbox: the instance that emitted it. That process's
	// observer saw the event when it was emitted; this is its delivery.
	From string `json:"from,omitempty"`
	// Metadata is structured data: worker_complete's metadata.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Parents are a created task's parent tasks (task.created).
	Parents []string `json:"parents,omitempty"`
}

// Observer receives every platform event, after it is on its log, outside
// the platform's locks, in sequence (Seq) order: one actor at a time
// delivers, so calls never overlap. It must not block; it may read the
// Platform.
type Observer interface {
	Observe(Event)
}

// An EventReader is an Observer that the platform hands each event by its
// address (ReadEvent) instead of Observe's copy: an Event is some 340
// bytes, copied once more at every call that takes it by value. The event
// is the platform's only for the call: ReadEvent reads it and keeps no
// pointer to it (its strings and slices it may keep). TraceObserver's
// observer is one.
type EventReader interface {
	Observer
	ReadEvent(e *Event)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(Event)

// Observe calls f.
func (f ObserverFunc) Observe(e Event) { f(e) }
