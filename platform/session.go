package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/platform/store"
)

// Kind says how a session came to be.
type Kind string

// Session kinds.
const (
	KindRoot      Kind = "root"      // started by a user
	KindWorker    Kind = "worker"    // spawn_worker
	KindDelegate  Kind = "delegate"  // delegate_task
	KindTask      Kind = "task"      // one attempt at a durable task
	KindScheduled Kind = "scheduled" // a run of a schedule or loop
)

// State is where a session is.
type State string

// Session states. Failed, stopped and closed are terminal; a completed
// worker can still be woken by send_worker_message.
const (
	StateIdle      State = "idle"
	StateRunning   State = "running"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateStopped   State = "stopped"
	StateClosed    State = "closed"
)

// Terminal reports whether the session can never run again.
func (s State) Terminal() bool {
	return s == StateFailed || s == StateStopped || s == StateClosed
}

// over reports whether the session will never run again: it is in a
// terminal state, or it completed and is of a kind that nothing wakes again
// (a delegated child, a task attempt, a scheduled run; a completed worker
// can still be messaged and a root still takes user messages).
func (s *session) over() bool {
	return s.state.Terminal() || s.state == StateCompleted && s.kind != KindWorker && s.kind != KindRoot
}

// Role is a delegated child's role.
type Role string

// Delegation roles: a leaf cannot delegate further; an orchestrator can,
// while it is above the depth cap.
const (
	RoleLeaf         Role = "leaf"
	RoleOrchestrator Role = "orchestrator"
)

// session is one platform session. Every field is guarded by Platform.mu.
type session struct {
	id, parent, root string
	kind             Kind
	agentName        string
	tmpl             *core.Agent
	user, channel    string
	role             Role
	excluded         []string
	allowed          []string // nil: everything
	budget           int

	state  State
	active bool // its actor is running
	added  bool // addLocked made it live: it is in Platform.sessions
	// spawned: the session spawned a durable task (so its end may strand
	// a blocked one).
	spawned bool
	// mailbox: this process takes the session's mail at its task polls
	// (openMailboxLocked).
	mailbox bool
	// depth is how many sessions are above it in its tree. It is 32 bits,
	// beside the flags: a session of 760 bytes is one of the allocator's
	// 768-byte objects with its header, 8 more bytes one of 896.
	depth int32
	// platform is the Platform it is live on (addLocked), which the
	// platform's tools, shared by every Platform, find through it.
	platform *Platform
	// actorName and body start its actor (wakeLocked), made at its first
	// wake-up.
	actorName string
	body      func()
	history   []core.Message
	log       eventLog
	logBuf    [sessionLog]*record // the log's first room
	// pending is the queued input (queue, takePending), whose room is
	// kept from turn to turn and starts as pending0; first is the room of
	// a history that starts with one message, as a scheduled run's does.
	pending  []string
	pending0 [1]string
	first    [1]core.Message
	turns    int
	// turn is the running turn's context, nil between turns; turn0 is
	// the first turn's.
	turn     *turnCtx
	turn0    turnCtx
	children []string
	lastSeen time.Time // last provider step, for stale detection
	output   string    // the last turn's final output
	variant  *core.Agent
	// labels tag every turn's run-start event; inbox delivers messages
	// queued while a turn runs into that turn's next provider step.
	labels map[string]string
	inbox  func() []core.Message
	// calls remembers the platform tool calls the session made, by call
	// identity, so that a replayed provider response does not act twice.
	calls map[callIdentity]callRecord

	// task attempts
	task     string
	attempt  int
	report   *taskReport
	taskSlot *timerSlot
	// scheduled runs
	schedule      string
	scheduleKind  store.ScheduleKind
	origin        string
	originChannel string
}

type sessionKey struct{}

// turnCtx is a turn's context: the session's (its sessionKey value), and
// cancelled by an interrupt of the turn (cancel), by the platform's Close
// or Crash (its base context) and at the turn's end. It is what
// core.WithCancel of the base context below a context.WithValue of the
// session would be, made when it is first needed (real): until a Done, a
// value other than the session or a context made below it asks for it, a
// turn's context is this one struct (inside the session for its first
// turn), not the six allocations of those two, and its cancellation is
// two fields. Most turns never need it: loop-week's 240 runs do not.
type turnCtx struct {
	p *Platform
	s *session

	mu sync.Mutex
	// real is the context made when first needed, and stop its cancel;
	// before that, cause is why the turn was cancelled (nil while it is
	// not).
	real  context.Context
	stop  context.CancelCauseFunc
	cause error
}

// newTurnCtxLocked returns the context of s's turn about to start (s.turns
// counts it already).
func (p *Platform) newTurnCtxLocked(s *session) *turnCtx {
	t := &s.turn0
	if s.turns > 1 {
		t = new(turnCtx)
	}
	t.p, t.s = p, s
	return t
}

// Deadline: a turn has none.
func (t *turnCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done makes the real context: a channel that closes is waited on through
// the executor, which hears of it as it does of core.WithCancel's.
func (t *turnCtx) Done() <-chan struct{} { return t.materialize().Done() }

// Err is context.Canceled once the turn was cancelled, or the platform's
// base context was.
func (t *turnCtx) Err() error {
	err, _ := t.status()
	return err
}

// status is the context's Err and, once it is cancelled, its cause
// (context.Cause: why it was cancelled).
func (t *turnCtx) status() (err, cause error) {
	t.mu.Lock()
	real, own := t.real, t.cause
	t.mu.Unlock()
	switch {
	case real != nil:
		if err = real.Err(); err != nil {
			cause = context.Cause(real)
		}
	case own != nil:
		err, cause = context.Canceled, own
	default:
		if err = t.p.base.Err(); err != nil {
			cause = context.Cause(t.p.base)
		}
	}
	return err, cause
}

// Value is the session for sessionKey; any other key is the real
// context's.
func (t *turnCtx) Value(key any) any {
	if _, ok := key.(sessionKey); ok {
		return t.s
	}
	return t.materialize().Value(key)
}

// materialize makes the real context, cancelled already if the turn was.
func (t *turnCtx) materialize() context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.real == nil {
		t.real, t.stop = core.WithCancel(t.p.exec, t.p.base)
		if t.cause != nil {
			t.stop(t.cause)
		}
	}
	return t.real
}

// cancel cancels the turn with cause (context.Canceled when nil), unless
// it was cancelled already: the first cause stays, the base context's if
// it came first, as context.WithCancelCause's child keeps its parent's.
func (t *turnCtx) cancel(cause error) {
	t.mu.Lock()
	if stop := t.stop; stop != nil {
		t.mu.Unlock()
		stop(cause)
		return
	}
	if t.cause == nil {
		if t.p.base.Err() != nil {
			cause = context.Cause(t.p.base)
		}
		t.cause = cmp.Or(cause, context.Canceled)
	}
	t.mu.Unlock()
}

func sessionOf(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// SessionInfo is a snapshot of a session.
type SessionInfo struct {
	ID, Parent, Root string
	Kind             Kind
	Agent            string
	User, Channel    string
	Depth            int
	Role             Role
	State            State
	Turns            int
	Task             string
	Attempt          int
	Schedule         string
	// Tools are the tools the session's agent is offered (authored and
	// platform), sorted.
	Tools []string
	// Output is the last turn's final output.
	Output   string
	Children []string
	// History is the conversation so far.
	History []core.Message
}

// NewSession starts a root session. It runs nothing until Send.
func (p *Platform) NewSession(opts SessionOptions) (string, error) {
	tmpl, err := p.rootTemplate(opts)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.unlock()
	if p.closing {
		return "", ErrClosed
	}
	id := p.ids.NewID(IDSession)
	s := newRoot(id, tmpl, opts)
	if _, err := p.variantLocked(s); err != nil {
		return "", err
	}
	p.addLocked(s)
	p.openMailboxLocked(s)
	p.setTenantLocked(id, opts.Tenant)
	return id, nil
}

// RestoreSession re-opens a root session under an id that a crashed
// process had (the id is what tasks' ownership checks use). Its history is
// gone with the crash; events addressed to it while it was not live are
// delivered into its log.
func (p *Platform) RestoreSession(id string, opts SessionOptions) error {
	tmpl, err := p.rootTemplate(opts)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.unlock()
	if p.closing {
		return ErrClosed
	}
	if p.sessions.get(id) != nil {
		return fmt.Errorf("session %s is live", id)
	}
	s := newRoot(id, tmpl, opts)
	p.addLocked(s)
	p.setTenantLocked(id, opts.Tenant)
	s.log = append(s.log, p.parked[id]...)
	delete(p.parked, id)
	p.restoreMailLocked(s)
	p.openMailboxLocked(s)
	p.emitLocked(&Event{Session: id, Type: EventSessionRestored, Kind: s.kind, Agent: s.agentName, Channel: s.channel})
	if p.opts.TaskPollInterval > 0 {
		// Its tree is present at once: its workspace may be old.
		p.sharePresenceLocked()
	}
	return nil
}

// setTenantLocked records the tenant of a root's tree, when it has one.
func (p *Platform) setTenantLocked(root, tenant string) {
	if tenant == "" {
		return
	}
	if p.tenants == nil {
		p.tenants = map[string]string{}
	}
	p.tenants[root] = tenant
}

// rootTemplate is the agent a root session runs.
func (p *Platform) rootTemplate(opts SessionOptions) (*core.Agent, error) {
	tmpl := p.opts.Agents[opts.Agent]
	if tmpl == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, opts.Agent)
	}
	return tmpl, nil
}

// newRoot is the one constructor of a root session, new (NewSession) or
// reopened under its old id (RestoreSession): its agent, its user, its
// channel (web by default) and its own copies of the tool lists.
func newRoot(id string, tmpl *core.Agent, opts SessionOptions) *session {
	ch := opts.Channel
	if ch == "" {
		ch = "web"
	}
	return &session{id: id, root: id, kind: KindRoot, agentName: opts.Agent, tmpl: tmpl, user: opts.User, channel: ch,
		excluded: slices.Clone(opts.ExcludedTools), allowed: slices.Clone(opts.AllowedTools), budget: opts.MaxIterations}
}

// sessionLog is the room a new session's log starts with, inside the
// session itself: a turn of a child session logs about this many events.
const sessionLog = 6

func (p *Platform) addLocked(s *session) {
	if s.log == nil {
		s.log = s.logBuf[:0]
	}
	s.state = StateIdle
	s.lastSeen = p.clock.Now()
	if s.budget <= 0 {
		s.budget = p.opts.MaxIterations
	}
	p.sessions.set(s.id, s)
	s.added, s.platform = true, p
	p.order = append(p.order, s)
	if par := p.sessions.get(s.parent); par != nil {
		par.children = append(par.children, s.id)
	}
	p.emitOnLocked(s, &Event{Type: EventSessionCreated, Kind: s.kind, Agent: s.agentName,
		Other: s.parent, Channel: s.channel, Task: s.task, Attempt: s.attempt, Schedule: s.schedule})
}

// newChildLocked makes a child session of parent.
func (p *Platform) newChildLocked(parent *session, kind Kind, agent string) (*session, error) {
	tmpl := parent.tmpl
	name := parent.agentName
	if agent != "" {
		tmpl = p.opts.Agents[agent]
		name = agent
		if tmpl == nil {
			return nil, fmt.Errorf("%w %q; the agents are %s", ErrUnknownAgent, agent, strings.Join(keys.Sorted(p.opts.Agents), ", "))
		}
	}
	s := &session{id: p.ids.NewID(IDSession), parent: parent.id, root: parent.root, kind: kind, agentName: name,
		tmpl: tmpl, user: parent.user, channel: parent.channel, depth: parent.depth + 1, budget: parent.budget}
	s.inherit(authority(parent, p.opts.MaxDelegationDepth))
	return s, nil
}

// Send queues a user message for a root session and wakes it. A message
// of the form "/loop [interval] <prompt>" creates a loop instead. Either
// is a user message: only a live root session that is not closed (or
// otherwise terminal) takes it.
func (p *Platform) Send(sessionID, text string) error {
	p.mu.Lock()
	s, err := p.rootLocked(sessionID, "take user messages")
	if err == nil && s.state.Terminal() {
		err = fmt.Errorf("session %s is %s", sessionID, s.state)
	}
	if err != nil || IsLoopCommand(text) {
		p.unlock()
		if err == nil {
			_, err = p.Loop(sessionID, strings.TrimSpace(text))
		}
		return err
	}
	p.enqueueLocked(s, text)
	p.unlock()
	return nil
}

// rootLocked is the live root session sessionID, for a call that only a
// root session takes (what names it in the refusal): a user's message, a
// close. A worker, delegated child, task attempt or scheduled run is
// refused, since it ends with what started it, never behind its back.
func (p *Platform) rootLocked(sessionID, what string) (*session, error) {
	s := p.sessions.get(sessionID)
	if s == nil {
		return nil, fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	if s.kind != KindRoot {
		return nil, fmt.Errorf("session %s is a %s session; only root sessions %s", sessionID, s.kind, what)
	}
	return s, nil
}

// CloseSession ends a root session: its turn is interrupted and it takes no
// more messages. Any other session is refused with an error and left as it
// is: a worker, delegated child, task attempt or scheduled run ends with
// what started it.
func (p *Platform) CloseSession(sessionID string) error {
	p.mu.Lock()
	defer p.unlock()
	s, err := p.rootLocked(sessionID, "are closed")
	if err != nil {
		return err
	}
	p.setStateLocked(s, StateClosed)
	if s.turn != nil {
		s.turn.cancel(ErrClosed)
	}
	return nil
}

// queue adds text to the session's queued input.
func (s *session) queue(text string) {
	if s.pending == nil {
		s.pending = s.pending0[:0]
	}
	s.pending = append(s.pending, text)
}

// dropPending empties the session's queued input and keeps its room.
func (s *session) dropPending() {
	clear(s.pending)
	s.pending = s.pending[:0]
}

func (p *Platform) enqueueLocked(s *session, text string) {
	s.queue(text)
	p.emitOnLocked(s, &Event{Type: EventUserMessage, Text: text})
	p.wakeLocked(s)
}

// wakeLocked starts the session's actor if it has input and is not running.
func (p *Platform) wakeLocked(s *session) {
	if s.active || s.state.Terminal() || len(s.pending) == 0 {
		return
	}
	if s.body == nil {
		s.actorName, s.body = p.names.Join("session ", s.id), func() { p.runSession(s) }
	}
	s.active = p.startLocked(s.actorName, s.body)
}

// setStateLocked changes a session's state. Running and idle are implied
// by turn.start and turn.end, so only the other states are logged.
func (p *Platform) setStateLocked(s *session, st State) {
	if s.state == st {
		return
	}
	was := s.over()
	s.state = st
	p.endedLocked(s, was)
	if st != StateRunning && st != StateIdle {
		p.emitOnLocked(s, &Event{Type: EventSessionState, Status: string(st)})
	}
	// A spawner that will never run again strands its blocked tasks.
	p.strandBlockedLocked(s)
}

// turnEnd is how one turn ended.
type turnEnd struct {
	turn   int
	output string
	err    error
	cause  error // the cancellation cause, when the turn was interrupted
}

func (t turnEnd) status() string {
	switch {
	case t.err == nil:
		return "ok"
	case t.cause != nil:
		return "interrupted"
	}
	return "error"
}

// runSession is a session's actor: it runs turns while input is queued.
// It is its actor's whole body, so it ends as every tracked actor does
// (actorEnded), with no wrapper of p.actor around it.
func (p *Platform) runSession(s *session) {
	defer p.actorEnded()
	for {
		p.mu.Lock()
		if p.closing || s.state.Terminal() || len(s.pending) == 0 {
			s.active = false
			// An attempt stopped before its first turn has no turn's end
			// to give its running slot back: its actor's end does.
			if s.state.Terminal() && p.releaseAttemptLocked(s) {
				p.kickDispatchLocked()
			}
			p.unlock()
			return
		}
		// The queued input joins the history here, under the lock: its
		// room is the queue's next turn's.
		history := slices.Clip(s.history)
		if len(history) == 0 && len(s.pending) == 1 {
			history = s.first[:0:1]
		}
		for _, m := range s.pending {
			history = append(history, core.Message{Role: core.RoleUser, Content: m})
		}
		s.dropPending()
		s.turns++
		turn := s.turns
		ctx := p.newTurnCtxLocked(s)
		s.turn = ctx
		agent, verr := p.variantLocked(s)
		if s.inbox == nil {
			s.labels = map[string]string{"session": s.id, "kind": string(s.kind)}
			s.inbox = func() []core.Message { return p.takeInbox(s) }
		}
		p.setStateLocked(s, StateRunning)
		p.emitOnLocked(s, &Event{Type: EventTurnStart, Turn: turn})
		p.unlock()

		p.exec.Yield(core.Point{Kind: PointSessionTurn, Run: s.id, Agent: s.agentName, Step: turn, Event: "turn"})
		end := turnEnd{turn: turn, err: verr}
		var msgsAfter []core.Message
		if verr == nil {
			// The session is the Work owner of all its turns, so a turn sees
			// the Work an earlier turn started; messages queued while the
			// turn runs reach its next provider step.
			res, err := p.rt.RunWith(ctx, agent, nil, core.RunOptions{History: history, MaxSteps: s.budget,
				Owner: s.id, Inbox: s.inbox, Labels: s.labels})
			end.err = err
			if res != nil {
				msgsAfter = res.Messages
				if res.Output != nil {
					end.output = res.Output.Raw
				}
			}
		}
		if msgsAfter == nil {
			msgsAfter = history
		}
		if end.err != nil {
			_, end.cause = ctx.status()
		}
		ctx.cancel(nil)

		p.mu.Lock()
		s.turn = nil
		s.history = msgsAfter
		s.output = end.output
		if errors.Is(end.cause, errCrashed) || errors.Is(end.cause, errClosing) {
			s.active = false
			p.unlock()
			return
		}
		// The turn's skill calls are in the history now: the training
		// collector's, kept before anything the turn's end sets off.
		p.keepSkillsLocked(s, len(history))
		ev := Event{Type: EventTurnEnd, Turn: turn, Status: end.status(), Text: end.output}
		if end.err != nil {
			ev.Error = end.err.Error()
		}
		p.emitOnLocked(s, &ev)
		after := p.afterTurnLocked(s, end)
		p.unlock()
		if after != nil {
			after()
		}
	}
}

// takeInbox hands a running turn the messages queued for its session since
// the turn began (a worker.complete notice, a steering message), as user
// messages of its next provider request.
func (p *Platform) takeInbox(s *session) []core.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A provider step starts (see activity).
	s.lastSeen = p.clock.Now()
	if len(s.pending) == 0 || s.state.Terminal() {
		return nil
	}
	msgs := make([]core.Message, len(s.pending))
	for i, m := range s.pending {
		msgs[i] = core.Message{Role: core.RoleUser, Content: m}
	}
	s.dropPending()
	return msgs
}

// afterTurnLocked applies what a turn's end means for the session's kind.
// It may return work to do outside the lock (durable writes).
func (p *Platform) afterTurnLocked(s *session, end turnEnd) func() {
	switch s.kind {
	case KindRoot:
		if !s.state.Terminal() {
			p.setStateLocked(s, StateIdle)
		}
	case KindWorker:
		p.workerTurnEndedLocked(s, end)
	case KindDelegate:
		p.delegateTurnEndedLocked(s, end)
	case KindTask:
		return p.taskTurnEnded(s, end)
	case KindScheduled:
		return p.scheduledTurnEnded(s, end)
	}
	return nil
}

// Session returns a snapshot of a live session.
func (p *Platform) Session(id string) (SessionInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessions.get(id)
	if s == nil {
		return SessionInfo{}, false
	}
	info := SessionInfo{ID: s.id, Parent: s.parent, Root: s.root, Kind: s.kind, Agent: s.agentName, User: s.user,
		Channel: s.channel, Depth: int(s.depth), Role: s.role, State: s.state, Turns: s.turns, Task: s.task,
		Attempt: s.attempt, Schedule: s.schedule, Output: s.output, Children: slices.Clone(s.children),
		History: slices.Clone(s.history)}
	if a, err := p.variantLocked(s); err == nil {
		info.Tools = keys.Sorted(a.Tools)
	}
	return info, true
}

// Sessions lists the live sessions' ids in creation order.
func (p *Platform) Sessions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.order))
	for i, s := range p.order {
		out[i] = s.id
	}
	return out
}

// TreeNode is one session of a live tree.
type TreeNode struct {
	ID       string      `json:"id"`
	Kind     Kind        `json:"kind"`
	Agent    string      `json:"agent"`
	State    State       `json:"state"`
	Depth    int         `json:"depth"`
	Role     Role        `json:"role,omitempty"`
	Task     string      `json:"task,omitempty"`
	Schedule string      `json:"schedule,omitempty"`
	Children []*TreeNode `json:"children,omitempty"`
}

// Tree returns the descendant graph of a session, children in creation
// order: what GET /v1/sessions/{id}/tree answers.
func (p *Platform) Tree(id string) (*TreeNode, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessions.get(id)
	if s == nil {
		return nil, fmt.Errorf("%w %s", ErrUnknownSession, id)
	}
	var walk func(s *session) *TreeNode
	walk = func(s *session) *TreeNode {
		n := &TreeNode{ID: s.id, Kind: s.kind, Agent: s.agentName, State: s.state, Depth: int(s.depth), Role: s.role,
			Task: s.task, Schedule: s.schedule}
		for _, c := range s.children {
			if cs := p.sessions.get(c); cs != nil {
				n.Children = append(n.Children, walk(cs))
			}
		}
		return n
	}
	return walk(s), nil
}

// ---- toolsets ----

// A session's provider steps are its activity, for the stale check
// (lastSeen): it is recorded when a step starts and when it returns. A
// turn's inbox is polled just before each provider step (takeInbox
// records its start), and the runtime's provider (activityProvider)
// records its return, so that the platform puts no middleware of its own
// in front of an agent's: a run whose agent has none is cheaper for the
// runtime (no middleware chain, and with a provider that reads requests
// only, no check of the history it sealed). An agent's own middleware may
// take time around the step, and then the activity middleware, outermost,
// records the step instead, as the platform always did.

// activity is the middleware that records a session's provider steps
// around its agent's own middleware.
func (p *Platform) activity(ctx context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
	s := sessionOf(ctx)
	if s != nil {
		p.mu.Lock()
		s.lastSeen = p.clock.Now()
		p.mu.Unlock()
	}
	resp, err := next(ctx, req)
	if s != nil {
		p.mu.Lock()
		s.lastSeen = p.clock.Now()
		p.mu.Unlock()
	}
	return resp, err
}

// activityProvider is the runtime's provider: the platform's, and when a
// step of a session's own run (not a child's) returns, the session's
// activity, unless its agent's middleware records it (activity).
type activityProvider struct {
	p    *Platform
	next core.Provider
}

func (a *activityProvider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	resp, err := a.next.Step(ctx, req)
	if s := sessionOf(ctx); s != nil && req.Run == s.id {
		a.p.mu.Lock()
		if s.variant != nil && len(s.variant.Use) == 0 {
			s.lastSeen = a.p.clock.Now()
		}
		a.p.mu.Unlock()
	}
	return resp, err
}

// ReadsRequestsOnly passes on the platform's provider's promise: the
// platform reads nothing of a request.
func (a *activityProvider) ReadsRequestsOnly() bool {
	r, ok := a.next.(core.RequestReader)
	return ok && r.ReadsRequestsOnly()
}
