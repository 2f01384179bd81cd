package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform/store"
)

// taskReport is what a task worker reported during its attempt.
type taskReport struct {
	completed bool
	summary   string
	metadata  json.RawMessage
	blocked   bool
	reason    string
}

// TaskReceipt answers spawn_task.
type TaskReceipt struct {
	TaskID string          `json:"task_id"`
	State  store.TaskState `json:"state"`
}

// SpawnTask creates a durable task as session would with spawn_task.
func (p *Platform) SpawnTask(sessionID string, t store.Task) (store.Task, error) {
	p.mu.Lock()
	s := p.sessions.get(sessionID)
	p.mu.Unlock()
	if s == nil {
		return store.Task{}, fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	return p.spawnTask(s, t)
}

func (p *Platform) spawnTask(s *session, t store.Task) (store.Task, error) {
	if t.Agent == "" {
		t.Agent = s.agentName
	}
	if p.opts.Agents[t.Agent] == nil {
		return store.Task{}, modelErr("invalid_arguments", "unknown agent %q", t.Agent)
	}
	if t.MaxAttempts <= 0 {
		t.MaxAttempts = p.opts.TaskMaxAttempts
	}
	t.ID = p.ids.NewID(IDTask)
	t.Spawner, t.Root, t.User, t.CreatedAt = s.id, s.root, s.user, p.clock.Now()
	p.mu.Lock()
	t.Authority = authority(s, p.opts.MaxDelegationDepth)
	t.Authority.Depth = int(s.depth) + 1 // an attempt runs a level below its spawner
	t.Tenant = p.tenants[s.root]
	p.mu.Unlock()
	var row store.Task
	err := p.durable(func() error {
		var err error
		row, err = p.store.CreateTask(p.ctx(), t)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.Task{}, modelErr("invalid_arguments", "%v", err)
	}
	if err != nil {
		return store.Task{}, err
	}
	var dead []store.Task // parents that ended failed or cancelled
	for _, id := range row.Parents {
		if pt, err := p.store.GetTask(p.ctx(), id); err == nil && (pt.State == store.TaskFailed || pt.State == store.TaskCancelled) {
			dead = append(dead, pt)
		}
	}
	p.mu.Lock()
	s.spawned = true
	p.openMailboxLocked(s)
	p.emitLocked(&Event{Session: s.id, Type: EventTaskCreated, Task: row.ID, Parents: row.Parents, Status: string(row.State),
		Text: row.Title})
	if row.State == store.TaskReady {
		p.kickDispatchLocked()
	}
	// A task created behind a parent that already failed or was
	// cancelled, or behind a stranded one, is stranded from the start.
	for _, pt := range dead {
		p.strandChildrenLocked(pt, []store.Task{row})
	}
	for _, id := range row.Parents {
		if why, ok := p.stranded[id]; ok && why != StrandedSpawnerGone {
			p.strandLocked(row, why, id)
		}
	}
	p.unlock()
	return row, nil
}

func (p *Platform) toolSpawnTask(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		Prompt      string   `json:"prompt"`
		Title       string   `json:"title"`
		Parents     []string `json:"parents"`
		MaxAttempts int      `json:"max_attempts"`
		Agent       string   `json:"agent"`
	}](&args)
	if err != nil {
		return nil, err
	}
	row, err := p.spawnTask(s, store.Task{Prompt: in.Prompt, Title: in.Title, Parents: in.Parents,
		MaxAttempts: in.MaxAttempts, Agent: in.Agent})
	if err != nil {
		return nil, err
	}
	return TaskReceipt{TaskID: row.ID, State: row.State}, nil
}

func ownershipErr(err error, id string) error {
	switch {
	case errors.Is(err, store.ErrNotOwner):
		return modelErr("not_owner", "only the session that spawned %s may do this", id)
	case errors.Is(err, store.ErrNotFound):
		return modelErr("not_found", "no task %s", id)
	case errors.Is(err, store.ErrState):
		return modelErr("invalid_state", "%v", err)
	}
	return err
}

func (p *Platform) toolUnblockTask(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		TaskID  string `json:"task_id"`
		Context string `json:"context"`
	}](&args)
	if err != nil {
		return nil, err
	}
	var t store.Task
	err = p.durable(func() error {
		var err error
		t, err = p.store.Unblock(p.ctx(), in.TaskID, s.id, in.Context, p.clock.Now())
		return err
	})
	if err != nil {
		return nil, ownershipErr(err, in.TaskID)
	}
	p.mu.Lock()
	p.emitLocked(&Event{Session: s.id, Type: EventTaskUnblocked, Task: t.ID, Text: in.Context})
	p.kickDispatchLocked()
	p.unlock()
	return TaskReceipt{TaskID: t.ID, State: t.State}, nil
}

func (p *Platform) toolCancelTask(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		TaskID string `json:"task_id"`
	}](&args)
	if err != nil {
		return nil, err
	}
	var t store.Task
	var prev store.TaskState
	err = p.durable(func() error {
		var err error
		t, prev, err = p.store.Cancel(p.ctx(), in.TaskID, s.id, p.clock.Now())
		return err
	})
	if err != nil {
		return nil, ownershipErr(err, in.TaskID)
	}
	stranded := p.strandedBy(t)
	p.mu.Lock()
	interrupted := ""
	if prev == store.TaskRunning {
		// Cancelling a running task interrupts its in-flight child session.
		if as := p.runningTasks[t.ID]; as != nil {
			interrupted = as.id
			p.stopLocked(as, errTaskCancel)
		}
	}
	p.emitLocked(&Event{Session: s.id, Type: EventTaskCancelled, Task: t.ID, Status: string(prev), Child: interrupted})
	p.strandChildrenLocked(t, stranded)
	p.unlock()
	return map[string]any{"task_id": t.ID, "state": t.State, "previous": prev, "interrupted": interrupted != ""}, nil
}

// Task reads a task row from the store.
func (p *Platform) Task(id string) (store.Task, error) { return p.store.GetTask(p.ctx(), id) }

// Attempts reads a task's attempts from the store.
func (p *Platform) Attempts(id string) ([]store.Attempt, error) { return p.store.Attempts(p.ctx(), id) }

// ---- the dispatcher ----

func (p *Platform) startTasks() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kickDispatchLocked()
	p.armReapLocked()
	if p.opts.TaskPollInterval > 0 {
		p.armPollLocked()
	}
}

func (p *Platform) armPollLocked() {
	p.pollSlot = p.afterLocked(p.opts.TaskPollInterval, "task-poll", func() {
		p.mu.Lock()
		p.kickDispatchLocked()
		p.armReapLocked()
		p.armPollLocked()
		running := make([]string, 0, len(p.runningTasks))
		for id := range p.runningTasks {
			running = append(running, id)
		}
		p.mu.Unlock()
		slices.Sort(running) // the same order every run
		p.stopRevoked(running)
		p.takeMail()
		p.sharePresence()
	})
}

// stopRevoked stops this process's attempts whose claim the store no
// longer holds for it: the spawner cancelled the task from another process
// (which cannot reach the attempt's session), or the lease lapsed and
// another process took the task. The poll notices within one interval, so
// a cancel interrupts the in-flight child session wherever it runs.
func (p *Platform) stopRevoked(ids []string) {
	for _, id := range ids {
		t, err := p.store.GetTask(p.ctx(), id)
		if err != nil || t.State == store.TaskRunning && t.ClaimedBy == p.instance {
			continue
		}
		p.mu.Lock()
		if as := p.runningTasks[id]; as != nil && as.state != StateStopped {
			p.stopLocked(as, errTaskCancel)
		}
		p.unlock()
	}
}

// kickDispatchLocked makes sure the dispatcher actor runs (again).
func (p *Platform) kickDispatchLocked() {
	if p.dispatching {
		p.dispatchAgain = true
		return
	}
	p.dispatching = p.goLocked("dispatcher", p.dispatch)
}

// dispatch claims ready tasks, up to MaxRunningTasks, and starts an attempt
// session for each.
func (p *Platform) dispatch() {
	for {
		p.mu.Lock()
		p.dispatchAgain = false
		if p.closing || len(p.runningTasks) >= p.opts.MaxRunningTasks {
			p.dispatching = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.exec.Yield(core.Point{Kind: PointTaskClaim, Event: "claim"})
		p.mu.Lock()
		if p.closing {
			// Close came during the yield: no claim, which would be a
			// durable write after it.
			p.dispatching = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		var c store.Claim
		ok := false
		err := p.durable(func() error {
			var err error
			c, ok, err = p.store.Claim(p.ctx(), p.instance, p.clock.Now(), p.opts.TaskTimeout)
			if errors.Is(err, store.ErrContended) {
				// Other processes took the candidates: nothing to run
				// now, and the next wake-up or poll tries again.
				err = nil
			}
			return err
		})
		if err != nil || !ok {
			p.mu.Lock()
			if p.dispatchAgain && err == nil {
				p.mu.Unlock()
				continue
			}
			p.dispatching = false
			p.mu.Unlock()
			return
		}
		p.startAttempt(c)
	}
}

func (p *Platform) startAttempt(c store.Claim) {
	t := c.Task
	prior, _ := p.store.Attempts(p.ctx(), t.ID)
	if len(prior) > 0 {
		prior = prior[:len(prior)-1] // the attempt just opened
	}
	prompt := AttemptPrompt(t, c.Attempt.N, prior)

	p.mu.Lock()
	tmpl := p.opts.Agents[t.Agent]
	if p.closing {
		// Close came between the dispatcher's last look and its claim.
		// Close writes nothing, so the claimed attempt is left to be
		// reaped like a crashed one when its lease lapses.
		p.unlock()
		return
	}
	if tmpl == nil {
		// The attempt fails at its claim (the agent is not configured
		// here, as after a release that renamed it): the claim started it
		// and its end is reported as any attempt's, so the spawner hears
		// of the retries and of the failure.
		p.emitLocked(&Event{Session: t.Spawner, Type: EventTaskStarted, Task: t.ID, Attempt: c.Attempt.N})
		p.unlock()
		p.finishAttempt(t.ID, c.Attempt.N, "",
			store.Finish{Outcome: store.OutcomeErrored, Error: fmt.Sprintf("unknown agent %q", t.Agent), At: p.clock.Now()})
		return
	}
	s := &session{id: p.ids.NewID(IDSession), root: t.Root, kind: KindTask, agentName: t.Agent, tmpl: tmpl,
		user: t.User, channel: "task", depth: 1, task: t.ID, attempt: c.Attempt.N}
	// The tree's tenant is the row's, whether or not its root is live here.
	p.setTenantLocked(t.Root, t.Tenant)
	// The attempt runs with the spawner's authority from the row, and at
	// the depth the row gives it, so that it has no more after a crash,
	// when the spawner is gone, than before.
	s.inherit(t.Authority)
	if t.Authority.Depth > 0 {
		s.depth = int32(t.Authority.Depth)
	}
	if sp := p.sessions.get(t.Spawner); sp != nil {
		s.parent, s.depth, s.budget = sp.id, sp.depth+1, sp.budget
	}
	p.addLocked(s)
	p.runningTasks[t.ID] = s
	p.emitLocked(&Event{Session: t.Spawner, Type: EventTaskStarted, Task: t.ID, Attempt: c.Attempt.N, Child: s.id})
	slot := p.afterLocked(p.opts.TaskTimeout, "task-timeout "+t.ID, func() {
		p.mu.Lock()
		defer p.unlock()
		if p.runningTasks[t.ID] == s && s.turn != nil {
			s.turn.cancel(errTaskTimeout)
		}
	})
	s.taskSlot = slot
	p.enqueueLocked(s, prompt)
	p.armReapLocked()
	p.unlock()
	_ = p.durable(func() error { return p.store.SetAttemptSession(p.ctx(), t.ID, c.Attempt.N, s.id) })
}

// taskTurnEnded turns an attempt's end into its outcome. The durable write
// happens outside the lock, in the returned function.
func (p *Platform) taskTurnEnded(s *session, end turnEnd) func() {
	p.releaseAttemptLocked(s)
	if errors.Is(end.cause, errTaskCancel) {
		// cancel_task already wrote the cancellation.
		p.kickDispatchLocked()
		return nil
	}
	f := store.Finish{At: p.clock.Now()}
	switch r := s.report; {
	case r != nil && r.blocked:
		f.Outcome, f.BlockReason = store.OutcomeBlocked, r.reason
	case r != nil && r.completed:
		f.Outcome, f.Summary, f.Metadata = store.OutcomeCompleted, r.summary, r.metadata
	case errors.Is(end.cause, errTaskTimeout):
		f.Outcome, f.Error = store.OutcomeTimedOut, "timed out after "+p.opts.TaskTimeout.String()
	case end.err != nil:
		f.Outcome, f.Error = store.OutcomeErrored, end.err.Error()
	default:
		// A worker that answered without worker_complete: its final
		// response is the summary.
		f.Outcome, f.Summary = store.OutcomeCompleted, end.output
	}
	if f.Outcome == store.OutcomeCompleted || f.Outcome == store.OutcomeBlocked {
		p.setStateLocked(s, StateCompleted)
	} else {
		p.setStateLocked(s, StateFailed)
	}
	taskID, n, child := s.task, s.attempt, s.id
	return func() { p.finishAttempt(taskID, n, child, f) }
}

// finishAttempt writes the outcome f of attempt n of task taskID (run by
// session child, if it got one) and reports it: the task.* events on the
// spawner's log, the tasks it promoted and those it strands. It is called
// outside the lock.
func (p *Platform) finishAttempt(taskID string, n int, child string, f store.Finish) {
	var t store.Task
	var promoted []string
	err := p.durable(func() error {
		var err error
		t, promoted, err = p.store.FinishAttempt(p.ctx(), taskID, n, p.instance, f)
		return err
	})
	var spawners []string
	for _, c := range promoted {
		ct, _ := p.store.GetTask(p.ctx(), c)
		spawners = append(spawners, ct.Spawner)
	}
	var stranded []store.Task
	if err == nil {
		stranded = p.strandedBy(t)
	}
	p.mu.Lock()
	defer p.unlock()
	if err == nil {
		p.taskEventsLocked(t, f, n, child)
		for i, c := range promoted {
			p.emitLocked(&Event{Session: spawners[i], Type: EventTaskPromoted, Task: c})
		}
		p.strandChildrenLocked(t, stranded)
	}
	p.kickDispatchLocked()
}

// releaseAttemptLocked gives back the running slot that attempt session s
// holds (and stops its task timeout). It is the one place a slot is
// released, however the attempt ends: its turn ended (taskTurnEnded), or
// its session was stopped (cancel_task, a revoked claim) before its first
// turn, so that its actor ends with no turn (runSession). It reports
// whether s still held the slot: a second call, or one for another kind of
// session, does nothing.
func (p *Platform) releaseAttemptLocked(s *session) bool {
	if s.kind != KindTask {
		return false
	}
	p.cancelSlotLocked(s.taskSlot)
	s.taskSlot = nil
	if p.runningTasks[s.task] != s {
		return false
	}
	delete(p.runningTasks, s.task)
	return true
}

// taskEventsLocked reports an attempt's outcome on the spawner's log and
// wakes the spawner where the seed's events call for its attention.
func (p *Platform) taskEventsLocked(t store.Task, f store.Finish, n int, child string) {
	switch t.State {
	case store.TaskDone:
		p.emitLocked(&Event{Session: t.Spawner, Type: EventWorkerComplete, Task: t.ID, Attempt: n, Child: child,
			Status: "completed", Text: t.Result, Metadata: t.Metadata})
		p.notifyLocked(t.Spawner, notice{Event: EventWorkerComplete, TaskID: t.ID, Status: "completed",
			Result: t.Result, Metadata: t.Metadata})
	case store.TaskBlocked:
		p.emitLocked(&Event{Session: t.Spawner, Type: EventTaskBlocked, Task: t.ID, Attempt: n, Child: child,
			Text: t.BlockReason})
		p.notifyLocked(t.Spawner, notice{Event: EventTaskBlocked, TaskID: t.ID, Reason: t.BlockReason})
		if sp := p.sessions.get(t.Spawner); sp != nil && sp.over() {
			p.strandLocked(t, StrandedSpawnerGone, "")
		}
	case store.TaskReady:
		p.emitLocked(&Event{Session: t.Spawner, Type: EventTaskRetry, Task: t.ID, Attempt: n, Child: child,
			Status: string(f.Outcome), Error: f.Error})
	case store.TaskFailed:
		p.emitLocked(&Event{Session: t.Spawner, Type: EventTaskFailed, Task: t.ID, Attempt: n, Child: child,
			Status: string(f.Outcome), Error: f.Error})
		p.notifyLocked(t.Spawner, notice{Event: EventTaskFailed, TaskID: t.ID, Status: string(f.Outcome)})
	}
}

// armReapLocked arms the reaper at the earliest lease (plus a grace), so
// that an attempt of a crashed process is retried.
func (p *Platform) armReapLocked() {
	at, ok, err := p.store.NextLease(p.ctx())
	if err != nil || !ok {
		return
	}
	p.cancelSlotLocked(p.reapSlot)
	p.reapSlot = p.afterLocked(at.Add(p.opts.ReapGrace).Sub(p.clock.Now()), "task-reaper", p.reap)
}

func (p *Platform) reap() {
	now := p.clock.Now()
	var reaped []store.Task
	_ = p.durable(func() error {
		var err error
		reaped, err = p.store.Reap(p.ctx(), now)
		return err
	})
	stranded := make([][]store.Task, len(reaped))
	for i, t := range reaped {
		stranded[i] = p.strandedBy(t)
	}
	p.mu.Lock()
	defer p.unlock()
	for i, t := range reaped {
		p.taskEventsLocked(t, store.Finish{Outcome: store.OutcomeCrashed, Error: "lease lapsed"}, t.Attempts, "")
		p.strandChildrenLocked(t, stranded[i])
	}
	p.reapSlot = nil
	p.kickDispatchLocked()
	p.armReapLocked()
}

// ---- the task worker's tools ----

func (p *Platform) toolWorkerComplete(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		Summary  string          `json:"summary"`
		Metadata json.RawMessage `json:"metadata"`
	}](&args)
	if err != nil {
		return nil, err
	}
	if string(in.Metadata) == "null" {
		in.Metadata = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s.report = &taskReport{completed: true, summary: in.Summary, metadata: in.Metadata}
	return map[string]any{"task_id": s.task, "status": "completed", "note": "Reported. End your turn."}, nil
}

func (p *Platform) toolWorkerBlock(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Reason string }](&args)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s.report = &taskReport{blocked: true, reason: in.Reason}
	return map[string]any{"task_id": s.task, "status": "blocked", "note": "The task pauses when your turn ends; the session that spawned it decides when it resumes."}, nil
}

// WorkerContext is worker_context's answer: the task and every attempt.
type WorkerContext struct {
	Task     store.Task      `json:"task"`
	Attempt  int             `json:"attempt"`
	Attempts []store.Attempt `json:"attempts"`
}

func (p *Platform) toolWorkerContext(_ context.Context, s *session, _ core.ToolCall, _ toolArgs) (any, error) {
	t, err := p.store.GetTask(p.ctx(), s.task)
	if err != nil {
		return nil, err
	}
	as, err := p.store.Attempts(p.ctx(), s.task)
	if err != nil {
		return nil, err
	}
	return WorkerContext{Task: t, Attempt: s.attempt, Attempts: as}, nil
}

// AttemptPrompt is the first message of attempt n: the task's prompt, its
// context entries, and from attempt 2 on a "## Prior attempts on this task"
// section with up to the last five attempts.
func AttemptPrompt(t store.Task, n int, prior []store.Attempt) string {
	var b strings.Builder
	b.WriteString(t.Prompt)
	if len(t.Context) > 0 {
		b.WriteString("\n\n## Task context\n")
		for _, c := range t.Context {
			fmt.Fprintf(&b, "- [%s] %s\n", c.At.UTC().Format(time.RFC3339), c.Text)
		}
	}
	if n >= 2 && len(prior) > 0 {
		b.WriteString("\n\n## Prior attempts on this task\n")
		if len(prior) > PriorAttemptsShown {
			prior = prior[len(prior)-PriorAttemptsShown:]
		}
		for _, a := range prior {
			fmt.Fprintf(&b, "\n### Attempt %d: %s\n", a.N, a.Outcome)
			switch a.Outcome {
			case store.OutcomeCompleted:
				b.WriteString(a.Summary)
			case store.OutcomeBlocked:
				b.WriteString("Blocked: " + a.BlockReason)
			case store.OutcomeCrashed:
				b.WriteString("(this attempt crashed before it reported anything)")
			case store.OutcomeTimedOut:
				b.WriteString("(this attempt timed out before it reported anything)")
			case store.OutcomeErrored:
				b.WriteString("(this attempt failed: " + a.Error + ")")
			default:
				b.WriteString("(" + string(a.Outcome) + ")")
			}
			b.WriteByte('\n')
		}
		b.WriteString("\nCall worker_context for the full structured detail. The shared workspace still holds the files earlier attempts left: resume, do not start over.")
	}
	return b.String()
}

// LostReason says why LostTasks calls a task lost.
type LostReason string

// Why a task is lost.
const (
	// LostUnreaped: the task runs in a process that is gone, its lease
	// lapsed more than ReapGrace+LostTaskGrace ago, and no process reaped
	// it.
	LostUnreaped LostReason = "unreaped"
	// LostUnclaimed: the task has been ready for more than LostTaskGrace
	// while this process had room to run it, and nothing claimed it.
	LostUnclaimed LostReason = "unclaimed"
	// LostUnpromoted: the task is todo though every parent is done.
	LostUnpromoted LostReason = "unpromoted"
)

// LostTask is a task that nothing will ever move again.
type LostTask struct {
	Task   store.Task
	Reason LostReason
}

// LostTasks is the platform's liveness rule for durable tasks, seen from
// this process at now: it returns every task that nothing will ever move
// again. A task is fine when it is terminal, blocked (waiting for its
// spawner), todo behind a parent that is not done, ready or running in
// this process, or running in another process whose lease has not lapsed
// long enough for the reaper to have acted (Options.ReapGrace, then
// Options.LostTaskGrace). The thresholds are this platform's options.
func (p *Platform) LostTasks(now time.Time) ([]LostTask, error) {
	tasks, err := p.store.ListTasks(p.ctx(), store.TaskFilter{})
	if err != nil {
		return nil, fmt.Errorf("platform: lost tasks: %w", err)
	}
	state := make(map[string]store.TaskState, len(tasks))
	runningHere := 0
	for _, t := range tasks {
		state[t.ID] = t.State
		if t.State == store.TaskRunning && t.ClaimedBy == p.instance {
			runningHere++
		}
	}
	var lost []LostTask
	for _, t := range tasks {
		switch t.State {
		case store.TaskRunning:
			if t.ClaimedBy != p.instance && !now.Before(t.LeaseUntil.Add(p.opts.ReapGrace+p.opts.LostTaskGrace)) {
				lost = append(lost, LostTask{Task: t, Reason: LostUnreaped})
			}
		case store.TaskReady:
			if runningHere < p.opts.MaxRunningTasks && now.Sub(t.UpdatedAt) > p.opts.LostTaskGrace {
				lost = append(lost, LostTask{Task: t, Reason: LostUnclaimed})
			}
		case store.TaskTodo:
			if len(t.Parents) > 0 && !slices.ContainsFunc(t.Parents, func(id string) bool { return state[id] != store.TaskDone }) {
				lost = append(lost, LostTask{Task: t, Reason: LostUnpromoted})
			}
		}
	}
	return lost, nil
}

// StrandedReason says why a task is stranded.
type StrandedReason string

// Why a task is stranded.
const (
	// StrandedParentFailed, StrandedParentCancelled: a parent of the todo
	// task (directly or through other todo tasks) ended failed or
	// cancelled, so the task is never promoted.
	StrandedParentFailed    StrandedReason = "parent_failed"
	StrandedParentCancelled StrandedReason = "parent_cancelled"
	// StrandedSpawnerGone: the task is blocked and its spawner, the only
	// session that may unblock or cancel it, will never run again (a
	// delegated child that finished, a closed root).
	StrandedSpawnerGone StrandedReason = "spawner_gone"
)

// strandedBy returns the todo tasks that a parent ending failed or
// cancelled strands: its todo children, and theirs, transitively. It reads
// the store, so it is called outside the lock.
func (p *Platform) strandedBy(parent store.Task) []store.Task {
	if parent.State != store.TaskFailed && parent.State != store.TaskCancelled {
		return nil
	}
	todo, err := p.store.ListTasks(p.ctx(), store.TaskFilter{States: []store.TaskState{store.TaskTodo}})
	if err != nil || len(todo) == 0 {
		return nil
	}
	dead := map[string]bool{parent.ID: true}
	var out []store.Task
	for grew := true; grew; {
		grew = false
		for _, t := range todo {
			if !dead[t.ID] && slices.ContainsFunc(t.Parents, func(id string) bool { return dead[id] }) {
				dead[t.ID], grew = true, true
				out = append(out, t)
			}
		}
	}
	return out
}

// strandLocked reports a stranded task once: an event on its spawner's log
// and a finding.
func (p *Platform) strandLocked(t store.Task, reason StrandedReason, other string) {
	if _, done := p.stranded[t.ID]; done {
		return
	}
	p.stranded[t.ID] = reason
	p.findings = append(p.findings, Finding{Kind: FindingStranded, Root: t.Root, Task: t.ID, Spawner: t.Spawner,
		Reason: reason, Other: other, At: p.clock.Now()})
	p.emitLocked(&Event{Session: t.Spawner, Type: EventTaskStranded, Task: t.ID, Status: string(reason), Other: other,
		Text: t.Title})
}

// strandChildrenLocked reports the tasks a failed or cancelled parent
// strands (found by strandedBy).
func (p *Platform) strandChildrenLocked(parent store.Task, children []store.Task) {
	reason := StrandedParentFailed
	if parent.State == store.TaskCancelled {
		reason = StrandedParentCancelled
	}
	for _, c := range children {
		p.strandLocked(c, reason, parent.ID)
	}
}

// strandBlockedLocked reports the blocked tasks of a spawner that will
// never run again. Only a session that spawned tasks reads the store.
func (p *Platform) strandBlockedLocked(s *session) {
	if !s.spawned || !s.over() {
		return
	}
	blocked, err := p.store.ListTasks(p.ctx(), store.TaskFilter{Spawner: s.id, States: []store.TaskState{store.TaskBlocked}})
	if err != nil {
		return
	}
	for _, t := range blocked {
		p.strandLocked(t, StrandedSpawnerGone, "")
	}
}
