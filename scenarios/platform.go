package scenarios

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
)

// Platform makes a scenario a run of the platform's background jobs
// (platform) instead of a run of top-level agents: root sessions that
// start with messages, loops, crons and durable tasks, on virtual time up to
// a horizon. The harness builds the platform on its simulator, drives the
// sessions, crashes and restarts the process where the scenario's crash
// faults say, and checks the platform invariants; the expectations read the
// platform's events (pattern kind platform) and its final state
// (Result.Platform).
type Platform struct {
	// Options configure the platform: its limits and cadences. The harness
	// sets Core, Agents, Store, Observer and Instance.
	Options platform.Options
	// Agents are the agents sessions may run, by id: every agent the
	// scenario declares.
	Agents map[string]*core.Agent
	// Sessions are the root sessions, made in order at the start.
	Sessions []Session
	// Tasks are durable tasks spawned at the start, in order, on behalf of
	// a session (as its spawn_task would).
	Tasks []Task
	// Crons are schedules made at the start (as cron_create would).
	Crons []Cron
	// Actions are what happens to the platform during the run, from
	// outside it: follow-up user messages, answers to ask_user_question,
	// training collections and a leader's death.
	Actions []Action
	// Replicas is how many platform processes share the durable store
	// (default 1). The sessions live on the first; every replica runs the
	// dispatcher, the sweepers and the scheduled-work ticker, which one of
	// them leads at a time.
	Replicas int
	// Horizon is how much virtual time the run covers. Default 24h.
	Horizon time.Duration
	// Store is the durable store each run opens fresh (and removes at its
	// end): the memory store unless the file names PostgreSQL.
	Store store.Backend
}

// ActionKind is what a platform action does.
type ActionKind string

// Platform actions.
const (
	// ActionSend sends a user message to a session (Platform.Send): a
	// follow-up turn, or "/loop ..." to create a loop.
	ActionSend ActionKind = "send"
	// ActionAnswer answers the oldest pending ask_user_question of a
	// session's tree (Platform.Answer).
	ActionAnswer ActionKind = "answer"
	// ActionCollectTraining runs the training collector
	// (Platform.CollectTraining) for a tenant.
	ActionCollectTraining ActionKind = "collect-training"
	// ActionKillLeader crashes the replica that holds the scheduled-work
	// ticker's lease, with no restart: the others must take over.
	ActionKillLeader ActionKind = "kill-leader"
)

// Action is one platform action: it happens At (an offset from the start
// of the run), or once After matches an entry of the trace, then Delay
// later.
type Action struct {
	Kind    ActionKind
	Session string // send, answer: the session, by name
	Text    string // send, answer
	Tenant  string // collect-training
	At      time.Duration
	After   *Pattern
	Delay   time.Duration
}

// Describe says what the action does, for the trace.
func (a Action) Describe() string {
	switch a.Kind {
	case ActionSend, ActionAnswer:
		return fmt.Sprintf("%s %s %q", a.Kind, a.Session, a.Text)
	case ActionCollectTraining:
		return fmt.Sprintf("%s for tenant %s", a.Kind, a.Tenant)
	}
	return string(a.Kind)
}

// DefaultHorizon is a platform run's virtual time when the scenario sets
// none.
const DefaultHorizon = 24 * time.Hour

// Session is a root session of a platform scenario.
type Session struct {
	// Name names the session in the scenario (tasks, crons); it defaults
	// to its agent's id.
	Name string
	platform.SessionOptions
	// Send are the user messages it receives at the start, in order; a
	// message "/loop [interval] <prompt>" creates a loop.
	Send []string
}

// Task is a durable task of a platform scenario.
type Task struct {
	// Name names the task in the scenario: parents and tasks-end refer to
	// it. It is the task's title unless Title is set.
	Name    string
	Session string
	Prompt  string
	Title   string
	Agent   string
	// Parents are names of tasks declared before it.
	Parents     []string
	MaxAttempts int
}

// Cron is a schedule of a platform scenario: on a cron cadence (Spec), or
// one-shot At an offset from the start of the run.
type Cron struct {
	Session string
	Spec    string
	At      time.Duration
	Prompt  string
}

// PlatformResult is the platform's durable state at the end of a run, and
// what the harness saw of it.
type PlatformResult struct {
	// Tasks are every task in the store, in creation order; Attempts their
	// attempts by task id.
	Tasks    []store.Task
	Attempts map[string][]store.Attempt
	// TaskNames maps the scenario's task names to their ids.
	TaskNames map[string]string
	Schedules []store.Schedule
	// Findings are the workspace findings of the last process (siblings
	// overwriting each other's files); Result.Findings renders them all.
	Findings []platform.Finding
	Posts    []platform.Post
	// Crashes counts the process crashes the run went through.
	Crashes int
	// Training are the rows of every JSONL file the training collector
	// wrote, in order.
	Training []TrainingRow
}

// TrainingRow is a row of a training collector's JSONL file, with the
// tenant whose bucket the file is in.
type TrainingRow struct {
	Tenant string
	platform.Trajectory
}

func (r *Result) platformResult() (*PlatformResult, *Failure) {
	if r.Platform == nil {
		return nil, fail(-1, "this is not a platform run: the expectation needs a scenario with a platform section")
	}
	return r.Platform, nil
}

// taskEntry returns the last platform entry about a task, for a failure's
// window, or -1.
func taskEntry(t *trace.Trace, id string) int {
	needle := " task=" + id
	for i := len(t.Entries) - 1; i >= 0; i-- {
		e := &t.Entries[i]
		if e.Kind == platform.TraceKind && strings.Contains(e.Detail+" ", needle+" ") {
			return i
		}
	}
	return -1
}

// TasksEnd claims that a task (by its scenario name), or every task in the
// store when Task is empty, ends in one of States. Every task ending done
// is "no task lost".
type TasksEnd struct {
	Task   string
	States []store.TaskState
}

// Check implements Expectation.
func (x TasksEnd) Check(r *Result) *Failure {
	pr, f := r.platformResult()
	if f != nil {
		return f
	}
	if x.Task != "" {
		if _, ok := pr.TaskNames[x.Task]; !ok {
			return fail(-1, "task %q was never spawned", x.Task)
		}
	}
	names := map[string]string{}
	for name, id := range pr.TaskNames {
		names[id] = name
	}
	checked := 0
	for _, t := range pr.Tasks {
		if x.Task != "" && pr.TaskNames[x.Task] != t.ID {
			continue
		}
		checked++
		if !slices.Contains(x.States, t.State) {
			who := t.ID
			if n := names[t.ID]; n != "" {
				who += " (" + n + ")"
			}
			return fail(taskEntry(r.Trace, t.ID), "%s ended %s after %d attempt(s); want %s", who, t.State, t.Attempts, joinStates(x.States))
		}
	}
	if checked == 0 {
		return fail(-1, "no task was spawned")
	}
	return nil
}

// Describe implements Expectation.
func (x TasksEnd) Describe() string {
	if x.Task == "" {
		return "every task ends " + joinStates(x.States)
	}
	return fmt.Sprintf("task %s ends %s", x.Task, joinStates(x.States))
}

func joinStates(ss []store.TaskState) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, " or ")
}

// ParentsFirst claims that no attempt of a task started before every one of
// its parents was done.
type ParentsFirst struct{}

// Check implements Expectation.
func (ParentsFirst) Check(r *Result) *Failure {
	pr, f := r.platformResult()
	if f != nil {
		return f
	}
	doneAt := map[string]time.Time{}
	for _, t := range pr.Tasks {
		if t.State != store.TaskDone {
			continue
		}
		for _, a := range pr.Attempts[t.ID] {
			if a.Outcome == store.OutcomeCompleted {
				doneAt[t.ID] = a.EndedAt
			}
		}
	}
	for _, t := range pr.Tasks {
		for _, a := range pr.Attempts[t.ID] {
			for _, parent := range t.Parents {
				at, done := doneAt[parent]
				if !done || a.StartedAt.Before(at) {
					when := "it never was"
					if done {
						when = "it was done at " + trace.Offset(at.Sub(r.Trace.Start))
					}
					return fail(taskEntry(r.Trace, t.ID), "attempt %d of %s started at %s before its parent %s was done (%s)",
						a.N, t.ID, trace.Offset(a.StartedAt.Sub(r.Trace.Start)), parent, when)
				}
			}
		}
	}
	return nil
}

// Describe implements Expectation.
func (ParentsFirst) Describe() string {
	return "no task starts before every one of its parents is done"
}

// FindingReported claims that the run reported a finding containing a text,
// such as a sibling overwriting a workspace file.
type FindingReported struct {
	Contains string
}

// Check implements Expectation.
func (x FindingReported) Check(r *Result) *Failure {
	for _, f := range r.Findings {
		if strings.Contains(f, x.Contains) {
			return nil
		}
	}
	if len(r.Findings) == 0 {
		return fail(-1, "the run reported no finding")
	}
	return fail(-1, "no finding contains %q; the findings are:\n  %s", x.Contains, strings.Join(r.Findings, "\n  "))
}

// Describe implements Expectation.
func (x FindingReported) Describe() string { return fmt.Sprintf("a finding contains %q", x.Contains) }

// TrainingRows claims how many rows of the training collector's JSONL
// exports match: in a Tenant's bucket, of a Type (delegation or skill), of
// an Agent, whose JSON line Contains a text. Min and Max bound the count
// (Max -1: no bound).
type TrainingRows struct {
	Tenant, Type, Agent, Contains string
	Min, Max                      int
}

// Check implements Expectation.
func (x TrainingRows) Check(r *Result) *Failure {
	pr, f := r.platformResult()
	if f != nil {
		return f
	}
	n := 0
	rows := make([]string, len(pr.Training))
	for i, t := range pr.Training {
		rows[i] = fmt.Sprintf("%s: %s of %s (%s%s) → %q", t.Tenant, t.Type, t.Agent, t.Goal, t.Skill, t.Response+t.Result)
		b, _ := json.Marshal(t.Trajectory)
		if x.Tenant != "" && t.Tenant != x.Tenant || x.Type != "" && t.Type != x.Type || x.Agent != "" && t.Agent != x.Agent ||
			!strings.Contains(string(b), x.Contains) {
			continue
		}
		n++
	}
	if n >= x.Min && (x.Max < 0 || n <= x.Max) {
		return nil
	}
	if len(rows) == 0 {
		return fail(-1, "0 training rows match; want %s; nothing was exported (is there a collect-training action?)", bounds(x.Min, x.Max))
	}
	return fail(-1, "%d training rows match; want %s; the %d exported rows are:\n  %s", n, bounds(x.Min, x.Max), len(rows),
		strings.Join(rows, "\n  "))
}

// Describe implements Expectation.
func (x TrainingRows) Describe() string {
	what := "training rows"
	if x.Type != "" {
		what = x.Type + " " + what
	}
	if x.Agent != "" {
		what += " of " + x.Agent
	}
	if x.Contains != "" {
		what += fmt.Sprintf(" containing %q", x.Contains)
	}
	if x.Tenant != "" {
		return fmt.Sprintf("%s %s are exported for tenant %s", bounds(x.Min, x.Max), what, x.Tenant)
	}
	return fmt.Sprintf("%s %s are exported", bounds(x.Min, x.Max), what)
}
