package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// TaskState is where a durable task is in its life. Which state follows
// which is the task lifecycle's business: see [TaskEvent] and [NextTask].
type TaskState string

// Task states.
const (
	TaskTodo      TaskState = "todo"
	TaskReady     TaskState = "ready"
	TaskRunning   TaskState = "running"
	TaskBlocked   TaskState = "blocked"
	TaskDone      TaskState = "done"
	TaskFailed    TaskState = "failed"
	TaskCancelled TaskState = "cancelled"
)

// Terminal reports whether no transition leaves s.
func (s TaskState) Terminal() bool {
	return s == TaskDone || s == TaskFailed || s == TaskCancelled
}

// Outcome is how one attempt at a task ended.
type Outcome string

// Attempt outcomes. Crashed, TimedOut and Errored count towards a task's
// consecutive failures; Completed, Blocked and Cancelled do not.
const (
	OutcomeRunning   Outcome = "running"
	OutcomeCompleted Outcome = "completed"
	OutcomeBlocked   Outcome = "blocked"
	OutcomeCrashed   Outcome = "crashed"
	OutcomeTimedOut  Outcome = "timeout"
	OutcomeErrored   Outcome = "error"
	OutcomeCancelled Outcome = "cancelled"
)

// Retryable reports whether the outcome counts as a consecutive failure
// that the dispatcher retries.
func (o Outcome) Retryable() bool {
	return o == OutcomeCrashed || o == OutcomeTimedOut || o == OutcomeErrored
}

// ContextEntry is one piece of context appended to a task, with the time it
// was appended (unblock_task's optional context).
type ContextEntry struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// Authority is what the session that created a row was allowed to do,
// kept on the row so that every session the row later makes (a task
// attempt, a scheduled run, a loop a scheduled /loop creates) runs with no
// more authority than its creator had, even after a crash when the creator
// is gone. Excluded are tool names the session never gets (a bare name is
// an authored tool and a platform tool alike; "platform:NAME" is the
// platform's tool only); when Restricted, Allowed is an allowlist. Depth is
// the delegation depth the row's sessions run at, what their creator gave
// them: the depth cap holds for them whether or not the creator is live
// (0 on rows written before it was kept). The zero value restricts
// nothing.
type Authority struct {
	Excluded   []string `json:"excluded,omitempty"`
	Restricted bool     `json:"restricted,omitempty"`
	Allowed    []string `json:"allowed"`
	Depth      int      `json:"depth,omitempty"`
}

// Clone returns a copy that shares no slice with a.
func (a Authority) Clone() Authority {
	return Authority{Excluded: slices.Clone(a.Excluded), Restricted: a.Restricted, Allowed: slices.Clone(a.Allowed), Depth: a.Depth}
}

// Task is one durable task row.
type Task struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Prompt string `json:"prompt"`
	// Agent names the agent an attempt runs.
	Agent string `json:"agent,omitempty"`
	// Spawner is the session that spawned the task: the only one that may
	// unblock or cancel it, and the log its events go to.
	Spawner string `json:"spawner"`
	// Root is the tree root whose workspace the attempts share.
	Root string `json:"root"`
	User string `json:"user,omitempty"`
	// Tenant is the tenant of that tree, so that an attempt's training
	// trajectories reach its bucket wherever the attempt runs.
	Tenant  string   `json:"tenant,omitempty"`
	Parents []string `json:"parents,omitempty"`
	// Authority is the spawner's: every attempt runs with it.
	Authority Authority `json:"authority,omitzero"`

	State       TaskState `json:"state"`
	MaxAttempts int       `json:"max_attempts"`
	// Attempts counts attempts started; Consecutive the trailing run of
	// crashed, timed-out or errored ones.
	Attempts    int            `json:"attempts"`
	Consecutive int            `json:"consecutive_failures"`
	Context     []ContextEntry `json:"context,omitempty"`

	// Result is worker_complete's summary; Metadata its structured
	// metadata.
	Result      string          `json:"result,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	BlockReason string          `json:"block_reason,omitempty"`

	// ClaimedBy is the process instance running the current attempt, and
	// LeaseUntil when that claim lapses if the process dies.
	ClaimedBy  string    `json:"claimed_by,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Attempt is one attempt at a task.
type Attempt struct {
	Task        string          `json:"task"`
	N           int             `json:"n"`
	Instance    string          `json:"instance"`
	Session     string          `json:"session,omitempty"`
	StartedAt   time.Time       `json:"started_at"`
	EndedAt     time.Time       `json:"ended_at,omitzero"`
	Outcome     Outcome         `json:"outcome"`
	Summary     string          `json:"summary,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	BlockReason string          `json:"block_reason,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// Finish is how an attempt ended, as its process reports it.
type Finish struct {
	Outcome     Outcome
	Summary     string
	Metadata    json.RawMessage
	BlockReason string
	Error       string
	At          time.Time
}

// Claim is a task a process took, with the attempt it opened.
type Claim struct {
	Task    Task
	Attempt Attempt
}

// Errors callers branch on.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrNotOwner: the calling session did not spawn the task.
	ErrNotOwner = errors.New("only the session that spawned the task may do this")
	// ErrState: the task is not in a state that allows the operation.
	ErrState = errors.New("task is not in a state that allows this")
	// ErrStale: the attempt the caller reports on is no longer the
	// task's current claim (it was cancelled, reaped or re-claimed).
	ErrStale = errors.New("attempt is no longer current")
	// ErrContended: Claim ran out of retries because other processes took
	// every ready candidate between its read and its write; try again.
	ErrContended = errors.New("other processes took every candidate first")
)

// TaskFilter selects tasks; zero fields match everything.
type TaskFilter struct {
	Spawner string
	Root    string
	States  []TaskState
}

// Tasks is the durable task table. Every method is atomic: two processes
// sharing one backing database can never both claim a task, both finish
// one attempt, or promote a child before all its parents are done. Times
// are the caller's: a lease lapses when a caller's now passes it.
type Tasks interface {
	// CreateTask inserts a task. Its state is ready when every parent is
	// done, todo otherwise. An unknown parent is ErrNotFound; a duplicate
	// id ErrExists.
	CreateTask(ctx context.Context, t Task) (Task, error)
	GetTask(ctx context.Context, id string) (Task, error)
	// ListTasks returns matching tasks in creation order.
	ListTasks(ctx context.Context, f TaskFilter) ([]Task, error)
	// Attempts returns a task's attempts, oldest first.
	Attempts(ctx context.Context, id string) ([]Attempt, error)
	// Claim takes the oldest ready task for instance: it becomes running
	// with a new attempt and a lease until now+lease. ok is false when no
	// task is ready.
	Claim(ctx context.Context, instance string, now time.Time, lease time.Duration) (c Claim, ok bool, err error)
	// SetAttemptSession records the session that runs an attempt.
	SetAttemptSession(ctx context.Context, task string, n int, session string) error
	// FinishAttempt applies an attempt's outcome if the attempt is still
	// the task's current claim by instance (ErrStale otherwise). Completed
	// makes the task done and promotes children whose parents are now all
	// done; Blocked blocks it; a retryable outcome makes it ready again or,
	// after MaxAttempts consecutive ones, failed. promoted lists the
	// children that became ready.
	FinishAttempt(ctx context.Context, task string, n int, instance string, f Finish) (t Task, promoted []string, err error)
	// Unblock makes a blocked task ready again, appending text (if any) to
	// its context with the time. Only the spawner may (ErrNotOwner).
	Unblock(ctx context.Context, task, by, text string, now time.Time) (Task, error)
	// Cancel cancels a non-terminal task. Only the spawner may. prev is the
	// state it had (running means an attempt must be interrupted).
	Cancel(ctx context.Context, task, by string, now time.Time) (t Task, prev TaskState, err error)
	// Reap ends every running attempt whose lease lapsed before now as
	// crashed, and returns the tasks it changed.
	Reap(ctx context.Context, now time.Time) ([]Task, error)
	// NextLease returns the earliest lease of a running task.
	NextLease(ctx context.Context) (time.Time, bool, error)
}

// ScheduleKind says how a schedule recurs.
type ScheduleKind string

// Schedule kinds.
const (
	// ScheduleCron fires on a 5-field cron cadence.
	ScheduleCron ScheduleKind = "cron"
	// ScheduleOnce fires once.
	ScheduleOnce ScheduleKind = "once"
	// ScheduleLoop is a fixed-interval /loop; it expires after 3 days.
	ScheduleLoop ScheduleKind = "loop"
	// ScheduleDynamic is a /loop without an interval: each run picks the
	// next delay with loop_wait. It expires after 7 days.
	ScheduleDynamic ScheduleKind = "dynamic"
)

// ScheduleState is where a schedule is.
type ScheduleState string

// Schedule states.
const (
	ScheduleActive    ScheduleState = "active"
	ScheduleCompleted ScheduleState = "completed"
	ScheduleDeleted   ScheduleState = "deleted"
)

// Schedule is a user-owned scheduled prompt.
type Schedule struct {
	ID   string       `json:"id"`
	User string       `json:"user"`
	Kind ScheduleKind `json:"kind"`
	// Cron is the 5-field expression (cron kind).
	Cron string `json:"cron,omitempty"`
	// Interval is a fixed loop's period.
	Interval time.Duration `json:"interval,omitempty"`
	Prompt   string        `json:"prompt"`
	Agent    string        `json:"agent,omitempty"`
	// Origin is the session results are delivered to (the conversation
	// that created the schedule); Channel that session's channel. Root is
	// the tree whose workspace every run reads and writes, whether or not
	// the origin is live.
	Origin  string `json:"origin,omitempty"`
	Channel string `json:"channel,omitempty"`
	Root    string `json:"root,omitempty"`
	// Tenant is the tenant of that tree, so that a run's training
	// trajectories reach its bucket wherever the run happens.
	Tenant string `json:"tenant,omitempty"`
	// Authority is the creator's: every run, and every loop a run's
	// slash command creates, runs with it.
	Authority Authority `json:"authority,omitzero"`

	State     ScheduleState `json:"state"`
	Reason    string        `json:"reason,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
	NextRun   time.Time     `json:"next_run,omitzero"`
	ExpiresAt time.Time     `json:"expires_at,omitzero"`
	LastRun   time.Time     `json:"last_run,omitzero"`
	Runs      int           `json:"runs"`
}

// Schedules is the durable schedule table and the ticker's leader lease.
type Schedules interface {
	CreateSchedule(ctx context.Context, s Schedule) error
	GetSchedule(ctx context.Context, id string) (Schedule, error)
	// ListSchedules returns a user's schedules (every user's when user is
	// empty) in creation order, deleted ones excluded.
	ListSchedules(ctx context.Context, user string) ([]Schedule, error)
	// DeleteSchedule marks a schedule deleted; only its user may.
	DeleteSchedule(ctx context.Context, id, user string) error
	// Due returns active schedules with NextRun at or before now, by
	// NextRun then id.
	Due(ctx context.Context, now time.Time) ([]Schedule, error)
	// Fire records a run of a due schedule by the ticker that leads under
	// lease (as TryLead granted it): only if lease is still the live lease
	// of its name at now (its holder and fencing token unchanged, not
	// lapsed), the schedule is active and its NextRun is still expect. So a
	// schedule fires at most once for one due time, and a deposed leader
	// fires nothing. NextRun becomes next (zero: none), Runs grows, LastRun
	// is now.
	Fire(ctx context.Context, lease Lease, id string, expect, next, now time.Time) (bool, error)
	// SetNext moves an active schedule's next run.
	SetNext(ctx context.Context, id string, next time.Time) error
	// Complete ends an active schedule with a reason.
	Complete(ctx context.Context, id, reason string) (bool, error)
	// NextDue returns the earliest NextRun of an active schedule.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// Expired returns active schedules whose ExpiresAt is at or before now.
	Expired(ctx context.Context, now time.Time) ([]Schedule, error)
	// TryLead takes or renews the named lease for holder until now+ttl
	// unless another holder's lease is still live at now. It returns the
	// lease as it now stands, whoever holds it (zero if nobody ever did),
	// so that a follower knows when to try again (Until), and whether
	// holder leads. See [Lease] for the fencing token.
	TryLead(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (Lease, bool, error)
}

// Lease is a named leader lease: the scheduled-work ticker's, which one
// process of all those sharing a store holds at a time.
type Lease struct {
	Name   string
	Holder string
	// Token is the lease's fencing token. It grows every time the lease
	// is taken by a holder that did not hold it live (a new holder, or the
	// old one back after its lease lapsed) and stays the same while its
	// holder renews it in time. A write made under a lease names it, and
	// the store refuses the write once the lease has moved on, so a
	// leader that stalled past its lease cannot act on stale leadership.
	Token int64
	Until time.Time
}

// takeLease is the lease rule, the same in every store: holder gets the
// lease until now+ttl unless another holder's lease is live at now (Until
// after now). Renewing one's own live lease keeps its token; any other
// take draws the next one.
func takeLease(cur Lease, holder string, now time.Time, ttl time.Duration) (Lease, bool) {
	live := cur.Until.After(now)
	if cur.Holder != "" && cur.Holder != holder && live {
		return cur, false
	}
	next := Lease{Name: cur.Name, Holder: holder, Token: cur.Token, Until: now.Add(ttl)}
	if cur.Holder != holder || !live {
		next.Token++
	}
	return next, true
}

// holds reports whether a write under lease may happen at now, when cur is
// the lease as the store has it: the same holder and token, not lapsed.
func (l Lease) holds(cur Lease, now time.Time) bool {
	return l.Holder != "" && cur.Holder == l.Holder && cur.Token == l.Token && cur.Until.After(now)
}

// FileMeta describes a stored file.
type FileMeta struct {
	Key     string    `json:"key"`
	Size    int       `json:"size"`
	Writer  string    `json:"writer"`
	Version int       `json:"version"`
	Updated time.Time `json:"updated"`
}

// Files is the object storage behind session workspaces and the training
// collector's exports.
type Files interface {
	// PutFile writes a file and returns the metadata of the version it
	// replaced, if any.
	PutFile(ctx context.Context, key string, data []byte, writer string, now time.Time) (prev *FileMeta, err error)
	GetFile(ctx context.Context, key string) ([]byte, FileMeta, error)
	// ListFiles returns files under prefix, sorted by key.
	ListFiles(ctx context.Context, prefix string) ([]FileMeta, error)
	// DeletePrefix deletes every file under prefix.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
}

// Mail is one message to a session, kept in the store until the process
// where the session is live takes it, or until it expires (ExpireMail):
// how an event reaches a session that is live in another process sharing
// the store, or in none for now (its process crashed and nothing reopened
// it yet). Its body is the sender's,
// opaque to the store.
type Mail struct {
	// Session is the addressee.
	Session string `json:"session"`
	// Seq orders the store's mail: the store numbers each post, a later
	// one higher than every mail still in its mailbox.
	Seq int64 `json:"seq"`
	// From is the instance that posted it.
	From string    `json:"from"`
	At   time.Time `json:"at"`
	Body string    `json:"body"`
}

// Mailboxes are the sessions' durable mailboxes, and the record of which
// trees have live sessions in some process (their presence), which
// processes sharing a store use to reach and respect each other's
// sessions.
type Mailboxes interface {
	// PostMail appends m to the mailbox of m.Session and returns it as
	// kept, numbered (m.Seq is ignored).
	PostMail(ctx context.Context, m Mail) (Mail, error)
	// TakeMail removes the mail of the given sessions from their
	// mailboxes and returns it in the order it was posted (by Seq). It is
	// atomic: of two processes taking one mailbox at once, each mail goes
	// to one.
	TakeMail(ctx context.Context, sessions []string) ([]Mail, error)
	// ExpireMail removes the mail posted before the time given (Mail.At),
	// whoever it is addressed to, and returns how many it removed: mail
	// that no process took in time.
	ExpireMail(ctx context.Context, before time.Time) (int, error)
	// SetPresence records that instance has live sessions in the trees of
	// roots until the time given, replacing what instance recorded before
	// (no roots: none).
	SetPresence(ctx context.Context, instance string, roots []string, until time.Time) error
	// Present returns the roots that some instance recorded as present
	// until after now, sorted.
	Present(ctx context.Context, now time.Time) ([]string, error)
}

// Trajectory is one successful trajectory that the training collector
// exports (a delegated child's conversation, a skill call with the
// conversation that led to it), kept when its work ended so that a
// process that starts after a crash exports what its predecessor did.
// Its body is the collector's JSONL line, opaque to the store.
type Trajectory struct {
	// Seq orders the store's trajectories: the store numbers each one it
	// keeps, a later one higher.
	Seq int64 `json:"seq"`
	// Tenant is the tenant of the tree it happened in ("" for a tree that
	// names none), Root that tree's root.
	Tenant string    `json:"tenant,omitempty"`
	Root   string    `json:"root"`
	At     time.Time `json:"at"`
	Body   string    `json:"body"`
}

// Training is the durable record of the trajectories the training
// collector exports: the part of the sessions' event logs that outlives
// the process they ran in.
type Training interface {
	// KeepTrajectory appends t and returns it as kept, numbered (t.Seq is
	// ignored).
	KeepTrajectory(ctx context.Context, t Trajectory) (Trajectory, error)
	// Trajectories returns the kept trajectories whose tenant is one of
	// tenants (every one when tenants is nil), in the order kept.
	Trajectories(ctx context.Context, tenants []string) ([]Trajectory, error)
}

// ScheduleWriteCounter is a store that counts the writes to its schedule
// rows, whoever makes them (this process or another sharing the store),
// and reads the count without a round trip. NextDue cannot change while
// the count stands still, so a ticker that polls an idle store asks the
// store only after a write. Memory is one; a store shared through a
// server, which cannot know of another process's writes without asking,
// is not.
type ScheduleWriteCounter interface {
	// ScheduleWrites returns the number of schedule writes so far.
	ScheduleWrites() uint64
}

// DueAppender is a store that appends what Due returns to a slice the
// caller keeps, so that a ticker that asks on every pass makes no new
// slice each time. Memory is one.
type DueAppender interface {
	// AppendDue appends Due(ctx, now) to dst.
	AppendDue(ctx context.Context, dst []Schedule, now time.Time) ([]Schedule, error)
}

// Store is everything the platform keeps durably: it survives a process
// crash.
type Store interface {
	Tasks
	Schedules
	Files
	Mailboxes
	Training
}

// endAttempt records an attempt's outcome.
func endAttempt(a *Attempt, f Finish) {
	a.EndedAt, a.Outcome, a.Summary, a.Metadata = f.At, f.Outcome, f.Summary, slices.Clone(f.Metadata)
	a.BlockReason, a.Error = f.BlockReason, f.Error
}

// finishTask ends t's running attempt with f: the lifecycle says what
// the task becomes ([FinishEvent], [NextTask]), and finishTask keeps the
// row's fields in step (result and metadata of a completion, the block
// reason, the run of consecutive failures, the claim). Both stores call
// it; promoting children is the caller's part.
func finishTask(t *Task, f Finish) error {
	consecutive := t.Consecutive
	if f.Outcome.Retryable() {
		consecutive++
	}
	ev := FinishEvent(f.Outcome, consecutive, t.MaxAttempts)
	to, err := NextTask(t.State, ev)
	if err != nil {
		return fmt.Errorf("task %s: %w", t.ID, err)
	}
	t.State, t.ClaimedBy, t.LeaseUntil, t.UpdatedAt = to, "", time.Time{}, f.At
	switch ev {
	case TaskComplete:
		t.Result, t.Metadata, t.Consecutive, t.BlockReason = f.Summary, slices.Clone(f.Metadata), 0, ""
	case TaskBlock:
		t.BlockReason, t.Consecutive = f.BlockReason, 0
	case TaskRetry, TaskGiveUp:
		t.Consecutive = consecutive
	}
	return nil
}

// moveTask applies a lifecycle event that changes nothing but the state
// (claim, promote, unblock, cancel of a task not running).
func moveTask(t *Task, e TaskEvent, now time.Time) error {
	to, err := NextTask(t.State, e)
	if err != nil {
		return fmt.Errorf("task %s: %w", t.ID, err)
	}
	t.State, t.UpdatedAt = to, now
	return nil
}
