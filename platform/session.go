package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
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
	depth            int
	role             Role
	excluded         []string
	allowed          []string // nil: everything
	budget           int
	created          time.Time

	state    State
	active   bool // its actor is running
	history  []core.Message
	log      []Event
	pending  []string
	turns    int
	cancel   context.CancelCauseFunc
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
	loopWaited    bool
}

type sessionKey struct{}

func withSession(ctx context.Context, s *session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
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
	tmpl := p.opts.Agents[opts.Agent]
	if tmpl == nil {
		return "", fmt.Errorf("%w %q", ErrUnknownAgent, opts.Agent)
	}
	ch := opts.Channel
	if ch == "" {
		ch = "web"
	}
	p.mu.Lock()
	defer p.unlock()
	if p.closing {
		return "", ErrClosed
	}
	id := p.ids.NewID(IDSession)
	s := &session{id: id, root: id, kind: KindRoot, agentName: opts.Agent, tmpl: tmpl, user: opts.User, channel: ch,
		excluded: slices.Clone(opts.ExcludedTools), allowed: slices.Clone(opts.AllowedTools), budget: opts.MaxIterations}
	if _, err := p.variantLocked(s); err != nil {
		return "", err
	}
	p.addLocked(s)
	return id, nil
}

// RestoreSession re-opens a root session under an id that a crashed
// process had (the id is what tasks' ownership checks use). Its history is
// gone with the crash; events addressed to it while it was not live are
// delivered into its log.
func (p *Platform) RestoreSession(id string, opts SessionOptions) error {
	tmpl := p.opts.Agents[opts.Agent]
	if tmpl == nil {
		return fmt.Errorf("%w %q", ErrUnknownAgent, opts.Agent)
	}
	ch := opts.Channel
	if ch == "" {
		ch = "web"
	}
	p.mu.Lock()
	defer p.unlock()
	if p.closing {
		return ErrClosed
	}
	if p.sessions[id] != nil {
		return fmt.Errorf("session %s is live", id)
	}
	s := &session{id: id, root: id, kind: KindRoot, agentName: opts.Agent, tmpl: tmpl, user: opts.User, channel: ch,
		excluded: slices.Clone(opts.ExcludedTools), allowed: slices.Clone(opts.AllowedTools), budget: opts.MaxIterations}
	p.addLocked(s)
	s.log = append(s.log, p.parked[id]...)
	delete(p.parked, id)
	p.emitLocked(Event{Session: id, Type: EventSessionRestored, Kind: s.kind, Agent: s.agentName, Channel: s.channel})
	return nil
}

// sessionLog is the room a new session's log starts with: a turn of a
// child session logs about this many events.
const sessionLog = 6

func (p *Platform) addLocked(s *session) {
	if s.log == nil {
		s.log = make([]Event, 0, sessionLog)
	}
	s.state = StateIdle
	s.created = p.clock.Now()
	s.lastSeen = s.created
	if s.budget <= 0 {
		s.budget = p.opts.MaxIterations
	}
	p.sessions[s.id] = s
	p.order = append(p.order, s)
	if par := p.sessions[s.parent]; par != nil {
		par.children = append(par.children, s.id)
	}
	p.emitLocked(Event{Session: s.id, Type: EventSessionCreated, Kind: s.kind, Agent: s.agentName,
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
			return nil, fmt.Errorf("%w %q; the agents are %s", ErrUnknownAgent, agent, strings.Join(slices.Sorted(maps.Keys(p.opts.Agents)), ", "))
		}
	}
	s := &session{id: p.ids.NewID(IDSession), parent: parent.id, root: parent.root, kind: kind, agentName: name,
		tmpl: tmpl, user: parent.user, channel: parent.channel, depth: parent.depth + 1,
		excluded: slices.Clone(parent.excluded), allowed: slices.Clone(parent.allowed), budget: parent.budget}
	return s, nil
}

// Send queues a user message for a root session and wakes it. A message
// of the form "/loop [interval] <prompt>" creates a loop instead.
func (p *Platform) Send(sessionID, text string) error {
	if strings.HasPrefix(strings.TrimSpace(text), "/loop") {
		_, err := p.Loop(sessionID, strings.TrimSpace(text))
		return err
	}
	p.mu.Lock()
	defer p.unlock()
	s := p.sessions[sessionID]
	if s == nil {
		return fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	if s.kind != KindRoot {
		return fmt.Errorf("session %s is a %s session; only root sessions take user messages", sessionID, s.kind)
	}
	if s.state.Terminal() {
		return fmt.Errorf("session %s is %s", sessionID, s.state)
	}
	p.enqueueLocked(s, text)
	return nil
}

// CloseSession ends a root session: its turn is interrupted and it takes no
// more messages.
func (p *Platform) CloseSession(sessionID string) error {
	p.mu.Lock()
	defer p.unlock()
	s := p.sessions[sessionID]
	if s == nil {
		return fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	p.setStateLocked(s, StateClosed)
	if s.cancel != nil {
		s.cancel(ErrClosed)
	}
	return nil
}

func (p *Platform) enqueueLocked(s *session, text string) {
	s.pending = append(s.pending, text)
	p.emitLocked(Event{Session: s.id, Type: EventUserMessage, Text: text})
	p.wakeLocked(s)
}

// wakeLocked starts the session's actor if it has input and is not running.
func (p *Platform) wakeLocked(s *session) {
	if s.active || s.state.Terminal() || len(s.pending) == 0 {
		return
	}
	s.active = p.goLocked("session "+s.id, func() { p.runSession(s) })
}

// setStateLocked changes a session's state. Running and idle are implied
// by turn.start and turn.end, so only the other states are logged.
func (p *Platform) setStateLocked(s *session, st State) {
	if s.state == st {
		return
	}
	s.state = st
	if st != StateRunning && st != StateIdle {
		p.emitLocked(Event{Session: s.id, Type: EventSessionState, Status: string(st)})
	}
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
func (p *Platform) runSession(s *session) {
	for {
		p.mu.Lock()
		if p.closing || s.state.Terminal() || len(s.pending) == 0 {
			s.active = false
			p.unlock()
			return
		}
		msgs := s.pending
		s.pending = nil
		s.turns++
		turn := s.turns
		ctx, cancel := context.WithCancelCause(p.base)
		s.cancel = cancel
		agent, verr := p.variantLocked(s)
		history := slices.Clip(s.history)
		if s.inbox == nil {
			s.labels = map[string]string{"session": s.id, "kind": string(s.kind)}
			s.inbox = func() []core.Message { return p.takeInbox(s) }
		}
		p.setStateLocked(s, StateRunning)
		p.emitLocked(Event{Session: s.id, Type: EventTurnStart, Turn: turn})
		p.unlock()

		p.exec.Yield(core.Point{Kind: PointSessionTurn, Run: s.id, Agent: s.agentName, Step: turn, Event: "turn"})
		for _, m := range msgs {
			history = append(history, core.Message{Role: core.RoleUser, Content: m})
		}
		end := turnEnd{turn: turn, err: verr}
		var msgsAfter []core.Message
		if verr == nil {
			// The session is the Work owner of all its turns, so a turn sees
			// the Work an earlier turn started; messages queued while the
			// turn runs reach its next provider step.
			res, err := p.rt.RunWith(withSession(ctx, s), agent, nil, core.RunOptions{History: history, MaxSteps: s.budget,
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
			end.cause = context.Cause(ctx)
			if ctx.Err() == nil {
				end.cause = nil
			}
		}
		cancel(nil)

		p.mu.Lock()
		s.cancel = nil
		s.history = msgsAfter
		s.output = end.output
		if errors.Is(end.cause, errCrashed) || errors.Is(end.cause, errClosing) {
			s.active = false
			p.unlock()
			return
		}
		ev := Event{Session: s.id, Type: EventTurnEnd, Turn: turn, Status: end.status(), Text: end.output}
		if end.err != nil {
			ev.Error = end.err.Error()
		}
		p.emitLocked(ev)
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
	if len(s.pending) == 0 || s.state.Terminal() {
		return nil
	}
	msgs := make([]core.Message, len(s.pending))
	for i, m := range s.pending {
		msgs[i] = core.Message{Role: core.RoleUser, Content: m}
	}
	s.pending = nil
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
	s := p.sessions[id]
	if s == nil {
		return SessionInfo{}, false
	}
	info := SessionInfo{ID: s.id, Parent: s.parent, Root: s.root, Kind: s.kind, Agent: s.agentName, User: s.user,
		Channel: s.channel, Depth: s.depth, Role: s.role, State: s.state, Turns: s.turns, Task: s.task,
		Attempt: s.attempt, Schedule: s.schedule, Output: s.output, Children: slices.Clone(s.children),
		History: slices.Clone(s.history)}
	if a, err := p.variantLocked(s); err == nil {
		info.Tools = slices.Sorted(maps.Keys(a.Tools))
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
	s := p.sessions[id]
	if s == nil {
		return nil, fmt.Errorf("%w %s", ErrUnknownSession, id)
	}
	var walk func(s *session) *TreeNode
	walk = func(s *session) *TreeNode {
		n := &TreeNode{ID: s.id, Kind: s.kind, Agent: s.agentName, State: s.state, Depth: s.depth, Role: s.role,
			Task: s.task, Schedule: s.schedule}
		for _, c := range s.children {
			if cs := p.sessions[c]; cs != nil {
				n.Children = append(n.Children, walk(cs))
			}
		}
		return n
	}
	return walk(s), nil
}

// ---- toolsets ----

// Tool families. The coordinator family is what a worker loses; the task
// worker family exists only in task attempts; the loop tools only in loop
// runs.
var (
	coordinatorFamily = []string{ToolSpawnWorker, ToolSendWorkerMessage, ToolStopWorker}
	// delegateStripped is what every delegated child loses, whatever its
	// preset or its parent's allowlist.
	delegateStripped = []string{ToolAskUserQuestion, ToolSpawnWorker, ToolSendWorkerMessage, ToolStopWorker}
	taskWorkerFamily = []string{ToolWorkerComplete, ToolWorkerBlock, ToolWorkerContext}
	// generalTools are the platform tools every session kind may have,
	// subject to the rules above and to allowlists and exclusions.
	generalTools = []string{ToolAskUserQuestion, ToolBoardClaim, ToolBoardNote, ToolBoardRead, ToolCancelTask,
		ToolCreateArtifact, ToolCronCreate, ToolCronDelete, ToolCronList, ToolDelegateTask, ToolListFiles,
		ToolReadFile, ToolSendWorkerMessage, ToolSpawnTask, ToolSpawnWorker, ToolStopWorker, ToolUnblockTask,
		ToolWriteFile}
)

// ToolNames lists every platform tool a session may be offered, sorted:
// the general tools, the task worker's and the loop tools.
func ToolNames() []string {
	out := slices.Concat(generalTools, taskWorkerFamily, []string{ToolLoopComplete, ToolLoopWait})
	slices.Sort(out)
	return slices.Compact(out)
}

// platformToolsFor is the toolset policy: which platform tools a session
// is offered. It is pure, so the rules live in one place.
func platformToolsFor(s *session, maxDepth int) []string {
	var out []string
	for _, name := range generalTools {
		if s.allowed != nil && !slices.Contains(s.allowed, name) {
			continue
		}
		if slices.Contains(s.excluded, name) {
			continue
		}
		switch s.kind {
		case KindWorker, KindTask:
			if slices.Contains(coordinatorFamily, name) {
				continue
			}
		case KindDelegate:
			if slices.Contains(delegateStripped, name) {
				continue
			}
		}
		if name == ToolDelegateTask && !canDelegate(s, maxDepth) {
			continue
		}
		out = append(out, name)
	}
	if s.kind == KindTask {
		out = append(out, taskWorkerFamily...)
	}
	if s.kind == KindScheduled {
		switch s.scheduleKind {
		case store.ScheduleLoop:
			out = append(out, ToolLoopComplete)
		case store.ScheduleDynamic:
			out = append(out, ToolLoopWait)
		}
	}
	slices.Sort(out)
	return out
}

// canDelegate: below the depth cap, and not a leaf child.
func canDelegate(s *session, maxDepth int) bool {
	if s.depth >= maxDepth {
		return false
	}
	return s.kind != KindDelegate || s.role == RoleOrchestrator
}

type variantKey struct {
	tmpl  *core.Agent
	tools string
}

// variantLocked returns the agent a session runs: its template with the
// authored tools it may use and the platform tools of its kind, and a
// middleware that records provider-step activity. Variants are cached per
// template and toolset, because the runtime prepares each *Agent once.
func (p *Platform) variantLocked(s *session) (*core.Agent, error) {
	if s.variant != nil {
		return s.variant, nil
	}
	// Most sessions have no allowlist and no exclusions: their toolset
	// depends only on what kind of session they are, so the variant is
	// found without computing the toolset (a loop makes a session an
	// hour).
	var quick quickKey
	if s.allowed == nil && len(s.excluded) == 0 {
		quick = quickKey{tmpl: s.tmpl, kind: s.kind, schedule: s.scheduleKind, delegates: canDelegate(s, p.opts.MaxDelegationDepth)}
		if a := p.quick[quick]; a != nil {
			s.variant = a
			return a, nil
		}
	}
	plat := platformToolsFor(s, p.opts.MaxDelegationDepth)
	var authored []string
	for _, name := range slices.Sorted(maps.Keys(s.tmpl.Tools)) {
		if _, clash := p.tools[name]; clash {
			return nil, fmt.Errorf("%w: agent %q, tool %q", ErrToolCollision, s.tmpl.ID, name)
		}
		if s.allowed != nil && !slices.Contains(s.allowed, name) || slices.Contains(s.excluded, name) {
			continue
		}
		authored = append(authored, name)
	}
	key := variantKey{tmpl: s.tmpl, tools: strings.Join(authored, ",") + "|" + strings.Join(plat, ",")}
	if a := p.variants[key]; a != nil {
		s.variant = a
		if quick.tmpl != nil {
			p.quick[quick] = a
		}
		return a, nil
	}
	a := *s.tmpl
	a.Prompt.Input = nil
	a.Prompt.Render = nil
	a.Tools = make(core.Tools, len(authored)+len(plat))
	for _, name := range authored {
		a.Tools[name] = s.tmpl.Tools[name]
	}
	for _, name := range plat {
		a.Tools[name] = p.tools[name]
	}
	a.Use = append([]core.Middleware{p.activity}, s.tmpl.Use...)
	p.variants[key] = &a
	if quick.tmpl != nil {
		p.quick[quick] = &a
	}
	s.variant = &a
	return &a, nil
}

// quickKey is what decides the toolset of a session without an allowlist
// or exclusions (see platformToolsFor).
type quickKey struct {
	tmpl      *core.Agent
	kind      Kind
	schedule  store.ScheduleKind
	delegates bool
}

// activity records a session's provider steps, for the stale check.
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
