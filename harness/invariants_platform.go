package harness

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/sim"
)

// TaskFacts is what a platform run's events said of one durable task.
type TaskFacts struct {
	Spawner string
	State   store.TaskState
	Parents []string
}

// PlatformInvariants are the rules of the platform's durable tasks, checked on
// every platform event of a platform run (and, for no-lost-task, at the
// horizon). A platform run checks them beside DefaultInvariants unless
// Options.Invariants says otherwise.
func PlatformInvariants() []Invariant {
	return []Invariant{
		{Name: "task-lifecycle-legal", Platform: checkTaskLifecycle},
		{Name: "parents-before-children", Platform: checkParentsFirst},
		{Name: "unblock-and-cancel-by-spawner", Platform: checkOwnerEvents, Check: checkOwnerCalls},
		// Checked once, at the horizon: every task is terminal, blocked
		// (waiting for its spawner), todo behind a parent that is not
		// done, or in the hands of a live process or of one whose lease
		// has not lapsed yet (the platform's rule, Platform.LostTasks).
		{Name: "no-lost-task", End: checkNoLostTask},
	}
}

// checkNoLostTask: at the end of a platform run, the live process finds
// no task that nothing will ever move again.
func checkNoLostTask(_ *Facts, end *End) string {
	if end.Platform == nil {
		return ""
	}
	lost, err := end.Platform.LostTasks(end.At)
	if err != nil {
		return "the store could not list tasks: " + err.Error()
	}
	msgs := make([]string, len(lost))
	for i, l := range lost {
		t := l.Task
		switch l.Reason {
		case platform.LostUnreaped:
			msgs[i] = fmt.Sprintf("%s is running in %s, which is gone, and its lease lapsed at %s without a process reaping it",
				t.ID, t.ClaimedBy, trace.Offset(t.LeaseUntil.Sub(sim.Epoch)))
		case platform.LostUnclaimed:
			msgs[i] = fmt.Sprintf("%s has been ready since %s and no process claims it", t.ID, trace.Offset(t.UpdatedAt.Sub(sim.Epoch)))
		default:
			msgs[i] = fmt.Sprintf("%s is todo though every parent is done", t.ID)
		}
	}
	return strings.Join(msgs, "; ")
}

// checkTaskLifecycle: a task is created todo or ready and moves only as
// its state machine allows; a terminal task never moves again.
func checkTaskLifecycle(s *Facts, e *platform.Event) string {
	if e.Task == "" {
		return ""
	}
	t := s.Tasks[e.Task]
	if e.Type == platform.EventTaskCreated {
		switch {
		case t != nil:
			return fmt.Sprintf("%s was created twice", e.Task)
		case e.Status != string(store.CreatedState(false)) && e.Status != string(store.CreatedState(true)):
			return fmt.Sprintf("%s was created %s; a task is created todo or ready", e.Task, e.Status)
		}
		return ""
	}
	move, ok := e.Type.TaskEvent()
	if !ok {
		return ""
	}
	if t == nil {
		return fmt.Sprintf("%s for %s, which was never created", e.Type, e.Task)
	}
	if _, err := store.NextTask(t.State, move); err != nil {
		if t.State.Terminal() {
			return fmt.Sprintf("%s was %s, a terminal state, and then %s reported it %s", e.Task, t.State, e.Type, move.Target())
		}
		return fmt.Sprintf("%s moved %s → %s (%s), which the task lifecycle does not allow", e.Task, t.State, move.Target(), e.Type)
	}
	if e.Type == platform.EventTaskCancelled && e.Status != string(t.State) {
		return fmt.Sprintf("%s was cancelled from %s, but it was %s", e.Task, e.Status, t.State)
	}
	return ""
}

// checkParentsFirst: a task is promoted or started only once every parent
// is done.
func checkParentsFirst(s *Facts, e *platform.Event) string {
	if e.Type != platform.EventTaskStarted && e.Type != platform.EventTaskPromoted {
		return ""
	}
	t := s.Tasks[e.Task]
	if t == nil {
		return ""
	}
	for _, p := range t.Parents {
		if pt := s.Tasks[p]; pt == nil || pt.State != store.TaskDone {
			state := store.TaskState("unknown")
			if pt != nil {
				state = pt.State
			}
			return fmt.Sprintf("%s %s while its parent %s was %s", e.Task, verbOf(e.Type), p, state)
		}
	}
	return ""
}

func verbOf(t platform.EventType) string {
	if t == platform.EventTaskStarted {
		return "started"
	}
	return "was promoted"
}

// checkOwnerEvents: only the session that spawned a task unblocks or
// cancels it.
func checkOwnerEvents(s *Facts, e *platform.Event) string {
	if e.Type != platform.EventTaskUnblocked && e.Type != platform.EventTaskCancelled {
		return ""
	}
	if t := s.Tasks[e.Task]; t != nil && e.Session != t.Spawner {
		return fmt.Sprintf("%s was %s by %s, but %s spawned it", e.Task, pastOf(e.Type), e.Session, t.Spawner)
	}
	return ""
}

func pastOf(t platform.EventType) string {
	if t == platform.EventTaskUnblocked {
		return "unblocked"
	}
	return "cancelled"
}

// checkOwnerCalls: an unblock_task or cancel_task call by any session but
// the spawner is refused.
func checkOwnerCalls(s *Facts, e *trace.Entry) string {
	if e.Kind != trace.ToolResult || e.IsError || e.Call == nil ||
		(e.Call.Name != platform.ToolUnblockTask && e.Call.Name != platform.ToolCancelTask) {
		return ""
	}
	var args struct {
		TaskID string `json:"task_id"`
	}
	if json.Unmarshal([]byte(e.Call.Arguments), &args) != nil {
		return ""
	}
	if t := s.Tasks[args.TaskID]; t != nil && t.Spawner != e.Run {
		return fmt.Sprintf("%s of %s by %s succeeded, but %s spawned it", e.Call.Name, args.TaskID, e.Run, t.Spawner)
	}
	return ""
}

// learnPlatform updates the task facts after the invariants have seen an
// event.
func (s *Facts) learnPlatform(e *platform.Event) {
	if e.Task == "" {
		return
	}
	if e.Type == platform.EventTaskCreated {
		if s.Tasks[e.Task] == nil {
			s.Tasks[e.Task] = &TaskFacts{Spawner: e.Session, State: store.TaskState(e.Status), Parents: e.Parents}
		}
		return
	}
	if move, ok := e.Type.TaskEvent(); ok {
		if t := s.Tasks[e.Task]; t != nil {
			t.State = move.Target()
		}
	}
}

// platform checks the platform event that entry (0-based) records, if the
// run kept it (the events about tasks).
func (c *checker) platform(entry int) {
	pr := c.r.plat
	if pr == nil {
		return
	}
	for pr.checked < len(pr.events) && pr.events[pr.checked].entry <= entry {
		pe := &pr.events[pr.checked]
		pr.checked++
		if pe.ev.From != "" {
			// Another process's event, delivered from the session's
			// mailbox: the invariants saw it where it was emitted.
			continue
		}
		if c.state.Tasks == nil {
			c.state.Tasks = map[string]*TaskFacts{}
		}
		for _, inv := range c.readingPlatform() {
			if inv.Platform == nil {
				continue
			}
			if msg := inv.Platform(&c.state, &pe.ev); msg != "" {
				c.violate(inv.Name, pe.entry+1, msg)
			}
		}
		c.state.learnPlatform(&pe.ev)
	}
}

// violate records a violation found at the 1-based entry.
func (c *checker) violate(name string, entry int, msg string) {
	if len(c.violations) >= maxViolations {
		return
	}
	step := c.r.sim.Steps()
	if c.r.sim.InActor() {
		step++ // found while an actor runs: its step counts
	}
	c.violations = append(c.violations, Violation{Invariant: name, Seed: c.r.opts.Seed, Step: step, Entry: entry, Message: msg})
}
