package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// instance is one running agent: the owner of the Work it starts. It is
// 208 bytes, so that a top-level run with its result and rooms is 480
// (see topRun), a child run with its rooms 416 (see newInstance).
type instance struct {
	// Context is the run's context: the caller's, with the runtime as
	// the value of runtimeKey (see Value), set as the run starts, so that
	// it needs no allocation of its own.
	context.Context
	rt      *Runtime
	p       *prepared
	id      string
	seq     uint64 // the run's sequence number in the runtime
	model   string
	w       *work // the Work this instance runs as, for background children
	step    int
	history []Message
	// steps is what is left of the step budget this run shares with its
	// foreground children: a foreground child runs inside its parent's
	// tool call, so its provider steps are its parent's time.
	steps *int
	// pool is where steps points for a run that is not a foreground
	// child; before the run starts, a top-level run's budget when it is
	// given one (RunOptions.MaxSteps), else 0.
	pool int
	// calls are the child calls of the current step, by identity.
	calls  occurrences
	inbox  func() []Message
	labels map[string]string
	// newMsgs is how many messages of the request in flight are new since
	// the previous one, for the innermost link of the middleware chain.
	newMsgs int
	// rooms are where the run's output and the first of its requests
	// without a status block are written, allocated with the run (see
	// topRun and newInstance); outUsed and reqUsed say they are used.
	rooms            *runRooms
	outUsed, reqUsed bool
	// lone: the response of the run's step has one tool call, so no call
	// identity can repeat at the step, and none is recorded (see
	// occurrences).
	lone bool
	// inputValid: the run is a child whose input its agent's schema was
	// found to remember as valid when the call's input was looked up
	// (see knownValidInput), so begin does not look again.
	inputValid bool
	// depth counts the child runs between this one and its top-level run
	// (0 for a top-level run).
	depth int32
}

// Value is the run context's: the runtime for runtimeKey, so that Sleep,
// Await and ClockOf find the runtime running the run.
func (inst *instance) Value(key any) any {
	if key == (runtimeKey{}) {
		return inst.rt
	}
	return inst.Context.Value(key)
}

// runRooms are the rooms a run is allocated with: its output's, and its
// first request's without a status block (see registry.newRequest).
type runRooms struct {
	out outputRoom
	req Request
}

// newInstance makes a child run of the agent: with its rooms in its
// allocation, as a top-level run has (see topRun).
func (rt *Runtime) newInstance(p *prepared, model string, w *work) *instance {
	c := &struct {
		inst  instance
		rooms runRooms
	}{}
	inst := &c.inst
	rt.initInstance(inst, p, model, w)
	inst.rooms = &c.rooms
	return inst
}

// initInstance makes inst a new run of the agent.
func (rt *Runtime) initInstance(inst *instance, p *prepared, model string, w *work) {
	*inst = instance{rt: rt, p: p, id: rt.runID(p), seq: rt.runSeq.Add(1), model: model, w: w}
}

// runID draws the id of a run of the agent.
func (rt *Runtime) runID(p *prepared) string {
	if scoped, ok := rt.opts.IDs.(ScopedIDSource); ok {
		return scoped.NewScopedID(IDRun, p.agent.ID)
	}
	return rt.opts.IDs.NewID(IDRun)
}

// initOwnedInstance is initInstance for a top-level run under an owner's
// id (RunOptions.Owner). The run still draws the id it would have had, so
// that the ids drawn after it do not depend on the owner; from
// SequentialIDs it only counts it, without writing it.
func (rt *Runtime) initOwnedInstance(inst *instance, p *prepared, model, owner string) {
	if s, ok := rt.opts.IDs.(*SequentialIDs); ok {
		s.skipScopedID(IDRun, p.agent.ID)
	} else {
		_ = rt.runID(p)
	}
	*inst = instance{rt: rt, p: p, id: owner, seq: rt.runSeq.Add(1), model: model}
}

// run executes the agent loop: provider step, tool round, next step, until a
// final output or the step budget. A cancelled context stops the run at the
// next semantic boundary: before a provider step or a tool call.
func (inst *instance) run(ctx context.Context, input any, mode RunMode, parent string) (out *Output, err error) {
	rt := inst.rt
	a := inst.p.agent
	inst.Context = ctx
	ctx = inst
	var seal runSeal
	given := len(inst.history)
	if given > 0 {
		seal.msgs.msgs = inst.continueHistory(input)
	}
	inst.emitRunStart(mode, parent, input)
	defer func() {
		if r := recover(); r != nil {
			err = errorf("agent %q panicked: %v", a.ID, r)
		}
		inst.endRun(ctx, mode, out, err)
		inst.noteHistory(given, seal.calls)
		// The run's last request is answered: its copy of the tool specs
		// can serve a later run, checked when the run's provider says
		// nothing that saw its requests writes to them.
		inst.p.specs.release(&seal.tools, inst.readOnly())
	}()

	if err := inst.begin(input, &seal.msgs); err != nil {
		return nil, err
	}
	step := inst.chain()
	budget := inst.p.maxSteps
	if budget <= 0 {
		budget = rt.opts.MaxSteps
	}
	if inst.steps == nil {
		if inst.pool > 0 { // RunOptions.MaxSteps
			budget = inst.pool
		}
		inst.pool = budget
		inst.steps = &inst.pool
	}
	for inst.step = 1; inst.step <= budget; inst.step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if *inst.steps <= 0 {
			return nil, errorf("agent %q: %w (its top-level run's steps are used up by the foreground children it runs inside)", a.ID, ErrStepBudget)
		}
		*inst.steps--
		inst.yield(PointProviderStep, "")
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if inst.inbox != nil {
			inst.history = append(inst.history, inst.inbox()...)
		}
		if inst.w != nil {
			inst.deliverGuidance()
		}
		resp, err := inst.request(ctx, step, &seal)
		if err != nil {
			return nil, err
		}
		if len(resp.ToolCalls) == 0 {
			if out, ok := inst.final(resp, &seal.msgs); ok {
				return out, nil
			}
			continue
		}
		if err := inst.toolRound(ctx, resp, &seal); err != nil {
			return nil, err
		}
	}
	return nil, errorf("agent %q: %w (%d steps)", a.ID, ErrStepBudget, budget)
}

// The helpers below keep what a run step does rarely, or only once, out of
// run's own frame: every background child starts a goroutine in run, and
// every foreground child nests a run inside a tool call, so the frames on
// that path decide how often a goroutine's stack has to grow.

// historyRoom is the room a run's history starts with past what it was
// given: its prompt (when it has one), a tool round of one call (when its
// agent has tools) and its final answer, so that the shortest run fits
// without the history growing; a run of an agent without tools (a
// research child) makes room for two messages, not four. When the
// agent's latest run added more messages than that, as many, up to
// maxHistoryRoom: runs of one agent take much the same steps (a
// harness's runs of a scenario, a service's of one agent), and a history
// that grows takes a second allocation and leaves its first room to
// the collector.
func (inst *instance) historyRoom(prompt bool) int {
	room := 1 // the answer
	if prompt {
		room++
	}
	if len(inst.p.tools) > 0 {
		room += 2 // a call and its result
	}
	return max(room, int(inst.p.grew.Load()))
}

// maxHistoryRoom bounds the room a run's history starts with by what the
// agent's latest run took.
const maxHistoryRoom = 32

// noteHistory remembers how many messages a run of the agent added to
// its history, for historyRoom, and how many tool calls it made, for
// appendAssistant (up to maxHistoryRoom each); n is the history's length
// as the run started.
func (inst *instance) noteHistory(n, calls int) {
	note(&inst.p.grew, len(inst.history)-n)
	note(&inst.p.calls, calls)
}

// note stores n, up to maxHistoryRoom, in a count of an agent's runs: a
// write only when it changes, since runs on many cores share it.
func note(count *atomic.Int32, n int) {
	if c := int32(min(n, maxHistoryRoom)); count.Load() != c {
		count.Store(c)
	}
}

// manyCalls is how many tool calls a response has before the run makes
// room for their records at once.
const manyCalls = occurrenceScanLimit

// runSeal is what a run keeps from request to request: its own copy of
// the history and of the tool specs, and how much of the history its
// previous request held.
type runSeal struct {
	msgs  runMessages
	tools runTools
	seen  int
	spare spareCalls // the copy's room for the latest tool calls
	// callRoom is where the copies of the run's tool calls are made (see
	// appendAssistant), and calls counts them.
	callRoom []ToolCall
	calls    int
}

// readOnly reports whether nothing that sees the run's next request can
// write to it: the agent has no middleware and the provider is a
// RequestReader that says so. The request's history is then only
// extended, not checked, and its tool specs, once the run's own, are
// not checked either.
func (inst *instance) readOnly() bool {
	if len(inst.p.agent.Use) > 0 {
		return false
	}
	r, ok := inst.rt.opts.Provider.(RequestReader)
	return ok && r.ReadsRequestsOnly()
}

// request seals the run's next provider request and sends it through the
// middleware chain.
func (inst *instance) request(ctx context.Context, step StepFunc, seal *runSeal) (*Response, error) {
	rt := inst.rt
	a := inst.p.agent
	// The request is sealed: it holds its own copy of the history, and
	// the run's own copy of the tool specs, put back as prepared, so
	// nothing that middleware or the provider does to it reaches the
	// history, the next request or another run.
	var room *Request
	if !inst.reqUsed {
		room = &inst.rooms.req
	}
	req, used := rt.registry.newRequest(inst.id, rt.opts.Clock.Now(), room)
	inst.reqUsed = inst.reqUsed || used
	req.Model = inst.model
	req.Agent, req.Run, req.Step = a.ID, inst.id, inst.step
	req.System = a.Prompt.System
	trusted := inst.readOnly()
	req.Messages = seal.msgs.seal(inst.history, trusted, &seal.spare)
	req.Tools = inst.p.specs.seal(&seal.tools, trusted)
	req.Output = a.Prompt.Output
	inst.newMsgs = len(inst.history) - seal.seen
	req.NewMessages = inst.newMsgs
	seal.seen = len(inst.history)
	var resp *Response
	var err error
	if step == nil {
		resp, err = inst.provide(ctx, req)
	} else {
		resp, err = step(ctx, req)
	}
	if err != nil {
		return nil, errorf("agent %q step %d: %w", a.ID, inst.step, err)
	}
	if resp == nil {
		resp = &Response{}
	}
	return resp, nil
}

// final reads a response without tool calls: the run's output, or, when
// the output is missing or invalid, a correction for the model and false.
func (inst *instance) final(resp *Response, sealed *runMessages) (*Output, bool) {
	out, problem := inst.finalOutput(resp)
	if problem == "" {
		// The final answer is part of the history, so that a later turn
		// on it sees its own previous answer.
		inst.history = append(inst.history, Message{Role: RoleAssistant, Content: out.Raw})
		return out, true
	}
	inst.grow(2, sealed)
	inst.history = append(inst.history,
		Message{Role: RoleAssistant, Content: firstNonEmpty(resp.Text, string(resp.Output))},
		Message{Role: RoleUser, Content: problem})
	return nil, false
}

// toolRound runs a response's tool calls in order, each answered in the
// history. Only a context error ends the run.
func (inst *instance) toolRound(ctx context.Context, resp *Response, seal *runSeal) error {
	// The history takes the response and a tool message per call: room
	// for them at once (and, for a response of many calls, for their
	// records), not message by message.
	inst.grow(1+len(resp.ToolCalls), &seal.msgs)
	inst.appendAssistant(resp, seal)
	inst.lone = len(resp.ToolCalls) == 1
	inst.calls.reserve(inst.step, len(resp.ToolCalls))
	for _, call := range resp.ToolCalls {
		if err := ctx.Err(); err != nil {
			return err
		}
		inst.yield(PointToolCall, call.Name)
		if err := ctx.Err(); err != nil {
			return err
		}
		msg, err := inst.callTool(ctx, call)
		if err != nil {
			return err
		}
		inst.history = append(inst.history, msg)
	}
	return nil
}

// appendAssistant appends a response with tool calls to the history, with
// its own copy of the calls.
// The copy is made twice in one allocation: the history's, and the run's
// sealed copy's, which the next request takes (see spareCalls). The copies
// of a run's calls are made in room for as many as the agent's latest run
// made, made at the run's first call, so that a run of several tool rounds
// allocates for them once.
func (inst *instance) appendAssistant(resp *Response, seal *runSeal) {
	n := len(resp.ToolCalls)
	room := seal.callRoom
	if cap(room)-len(room) < 2*n {
		room = make([]ToolCall, 0, 2*max(n, int(inst.p.calls.Load())-seal.calls))
	}
	at := len(room)
	room = room[:at+2*n]
	seal.callRoom, seal.calls = room, seal.calls+n
	both := room[at : at+2*n : at+2*n] // neither copy's appends reach the other's, or a later call's
	copy(both, resp.ToolCalls)
	copy(both[n:], resp.ToolCalls)
	seal.spare = spareCalls{of: &both[0], calls: both[n : 2*n : 2*n]}
	inst.history = append(inst.history, Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: both[:n:n]})
}

// spareCalls is a copy of the tool calls of the history's latest
// assistant message, apart from the history's own, for the run's sealed
// copy of the history to take when the message first joins a request.
// Nothing writes to the history's calls, so the two stay equal until then.
type spareCalls struct {
	of    *ToolCall // the first of the history's calls it copies
	calls []ToolCall
}

// take returns the spare copy of m's calls, or false when it holds none.
func (s *spareCalls) take(m *Message) ([]ToolCall, bool) {
	if s.of == nil || len(m.ToolCalls) == 0 || unsafe.SliceData(m.ToolCalls) != s.of {
		return nil, false
	}
	calls := s.calls
	*s = spareCalls{}
	return calls, true
}

// emitRequest reports a request as the provider receives it, and
// emitResponse its answer: the events are built out of the innermost link
// of the chain, which is on the stack while the provider runs.
func (inst *instance) emitRequest(req *Request) {
	ev := Event{Kind: EventRequest, Run: req.Run, Agent: req.Agent, Work: inst.workID()} // see emit
	ev.Step, ev.Request, ev.NewMessages = req.Step, req, inst.newMsgs
	inst.rt.emit(ev)
}

func (inst *instance) emitResponse(req *Request, resp *Response, err error) {
	ev := Event{Kind: EventResponse, Run: req.Run, Agent: req.Agent, Work: inst.workID()} // see emit
	ev.Step, ev.Response, ev.Err = req.Step, resp, err
	inst.rt.emit(ev)
}

// begin checks the run's input and starts its history with the prompt,
// making a history (and its sealed copy's room) for a run without one.
func (inst *instance) begin(input any, sealed *runMessages) error {
	a := inst.p.agent
	if !inst.inputValid { // else known valid when its call's input was looked up
		if err := a.Prompt.Input.validateValue(input); err != nil {
			return errorf("%w for agent %q: %v", ErrInvalidInput, a.ID, err)
		}
	}
	first, err := renderPrompt(a.Prompt, input)
	if err != nil {
		return errorf("agent %q prompt: %w", a.ID, err)
	}
	if first != "" {
		if inst.history == nil {
			sealed.msgs = inst.newHistory(0, inst.historyRoom(true))
		}
		inst.history = append(inst.history, Message{Role: RoleUser, Content: first})
	}
	return nil
}

// continueHistory copies a top-level run's History option, the caller's,
// into a history of the run's own (see newHistory), and returns the room
// of its sealed copy.
func (inst *instance) continueHistory(input any) []Message {
	given := inst.history
	sealed := inst.newHistory(len(given), inst.historyRoom(input != nil || inst.p.agent.Prompt.Render != nil))
	copy(inst.history, given)
	return sealed
}

// newHistory gives the run a history of n messages with room for room
// more, and returns the room its sealed copy (which every request takes)
// starts with: one fewer, since the run's last message, its answer, joins
// no request. The two are one allocation, apart, so that neither's
// appends reach the other; room for the shortest run with a tool call
// (see historyRoom) is 7 messages then, 680 bytes with the allocator's
// header, where the two apart took 768.
func (inst *instance) newHistory(n, room int) []Message {
	buf := make([]Message, n, 2*(n+room)-1)
	inst.history = buf[: n : n+room]
	return buf[n+room : n+room : cap(buf)]
}

// grow makes room for k more messages in the history, when it has not
// got it: it doubles the history's room, at least to k more, and its
// sealed copy's to one fewer (see newHistory), the two in one allocation,
// apart, as a new history's are. The sealed copy keeps its messages: the
// requests sealed before hold the room they were sealed in.
func (inst *instance) grow(k int, sealed *runMessages) {
	h := inst.history
	if cap(h)-len(h) >= k {
		return
	}
	c := max(2*cap(h), len(h)+k)
	if cap(sealed.msgs) >= c-1 {
		inst.history = slices.Grow(h, k)
		return
	}
	buf := make([]Message, 2*c-1)
	copy(buf, h)
	n := copy(buf[c:], sealed.msgs)
	inst.history = buf[:len(h):c]
	sealed.msgs = buf[c : c+n : 2*c-1]
}

// emitRunStart reports the start of the run.
func (inst *instance) emitRunStart(mode RunMode, parent string, input any) {
	ev := Event{Kind: EventRunStart, Run: inst.id, Agent: inst.p.agent.ID, Parent: parent} // see emit
	ev.Mode, ev.Input, ev.Labels, ev.Work = mode, input, inst.labels, inst.workID()
	inst.rt.emit(ev)
}

// endRun cancels the Work a cancelled run started and reports its end.
func (inst *instance) endRun(ctx context.Context, mode RunMode, out *Output, err error) {
	rt := inst.rt
	if err != nil && ctx.Err() != nil {
		// A cancelled run takes the Work it started with it; a run that
		// ends any other way leaves its Work running.
		rt.registry.cancelStartedBy(inst.id, inst.seq)
	}
	ev := Event{Kind: EventRunEnd, Run: inst.id, Agent: inst.p.agent.ID, Mode: mode} // see emit
	ev.Output, ev.Err, ev.Work = out, err, inst.workID()
	rt.emit(ev)
}

// yield marks a semantic point of the run: before a provider step, or
// before a tool call (of the tool).
func (inst *instance) yield(kind PointKind, tool string) {
	p := Point{Kind: kind, Run: inst.id, Work: inst.workID(), Agent: inst.p.agent.ID} // built in place (see emit)
	p.Step, p.Tool = inst.step, tool
	inst.rt.opts.Executor.Yield(p)
}

// deliverGuidance appends the guidance sent to the run's Work since its
// last step to its history.
func (inst *instance) deliverGuidance() {
	if msgs := inst.rt.registry.takeGuidance(inst.w); len(msgs) > 0 {
		inst.history = append(inst.history, msgs...)
		ev := Event{Kind: EventGuidanceDelivered, Run: inst.id, Agent: inst.p.agent.ID, Work: inst.w.ref.ID} // see emit
		ev.Step, ev.Cursor = inst.step, strconv.Itoa(len(msgs))
		inst.rt.emit(ev)
	}
}

// runMessages are one run's own copy of its history, which its requests
// carry: each message (with its tool calls) is copied once, when it first
// joins a request, and before each request the copy is checked against the
// history and put back where a middleware or provider changed it. So
// nothing done to one request's messages reaches the history or the next
// request, at the cost of a comparison, not a copy, per step.
type runMessages struct {
	msgs []Message
}

// seal returns the messages of the next request: the history, as the
// run's own copy. Unless trusted (nothing that saw the earlier requests
// could write to them), it first checks the messages the earlier requests
// held against the history and puts back any that were changed.
func (rm *runMessages) seal(h []Message, trusted bool, spare *spareCalls) []Message {
	if !trusted {
		for i := range rm.msgs {
			if !sameMessage(&rm.msgs[i], &h[i]) {
				rm.msgs[i] = copyMessage(h[i])
			}
		}
	}
	if cap(rm.msgs) < len(h) {
		// The copy grows as the history has grown: at once, to its room.
		rm.msgs = slices.Grow(rm.msgs, cap(h)-len(rm.msgs))
	}
	// The new messages are copied in place, each read once (a range
	// over them and an append would copy each twice).
	n := len(rm.msgs)
	rm.msgs = rm.msgs[:len(h)]
	for i := n; i < len(h); i++ {
		m := &rm.msgs[i]
		*m = h[i]
		if calls, ok := spare.take(m); ok {
			m.ToolCalls = calls
		} else {
			m.ToolCalls = copyCalls(m.ToolCalls)
		}
	}
	return rm.msgs[:len(h):len(h)]
}

func copyMessage(m Message) Message {
	m.ToolCalls = copyCalls(m.ToolCalls)
	return m
}

// copyCalls is a message's own copy of its tool calls.
func copyCalls(calls []ToolCall) []ToolCall { return slices.Clip(slices.Clone(calls)) }

// sameMessage reports whether a copy still equals the original. It runs
// for every message of the history before every request, so it compares
// strings by their bytes' address first: a copy that nothing changed
// shares its strings with the original, and that check is inline, where
// == calls into the runtime for each string.
func sameMessage(c, m *Message) bool {
	if c.Role != m.Role || !sameString(c.Content, m.Content) || !sameString(c.ToolCallID, m.ToolCallID) ||
		!sameString(c.ToolName, m.ToolName) || c.IsError != m.IsError || c.Guidance != m.Guidance || len(c.ToolCalls) != len(m.ToolCalls) {
		return false
	}
	for k := range c.ToolCalls {
		a, b := &c.ToolCalls[k], &m.ToolCalls[k]
		if !sameString(a.ID, b.ID) || !sameString(a.Name, b.Name) || !sameString(a.Arguments, b.Arguments) {
			return false
		}
	}
	return true
}

// sameString is a == b, at once for strings that share their bytes.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func (inst *instance) workID() string {
	if inst.w == nil {
		return ""
	}
	return inst.w.ref.ID
}

// chain builds the agent's middleware around the provider, or returns nil
// for an agent without middleware, whose requests go to provide directly.
func (inst *instance) chain() StepFunc {
	a := inst.p.agent
	if len(a.Use) == 0 {
		return nil
	}
	next := StepFunc(inst.provide)
	for i := len(a.Use) - 1; i >= 0; i-- {
		mw, inner := a.Use[i], next
		next = func(ctx context.Context, req *Request) (*Response, error) { return mw(ctx, req, inner) }
	}
	return next
}

// provide is the innermost link of the chain: it sends the request to
// the provider, and reports the request exactly as the provider receives
// it, and its answer.
func (inst *instance) provide(ctx context.Context, req *Request) (*Response, error) {
	inst.emitRequest(req)
	resp, err := inst.rt.opts.Provider.Step(ctx, req)
	inst.emitResponse(req, resp, err)
	return resp, err
}

// finalOutput reads a final response. It returns a model-facing correction
// instead when a structured output is missing or invalid.
func (inst *instance) finalOutput(resp *Response) (*Output, string) {
	schema := inst.p.agent.Prompt.Output
	if schema == nil {
		return inst.textOutput(resp.Text), ""
	}
	raw := bytes.TrimSpace(resp.Output)
	if len(raw) == 0 {
		raw = bytes.TrimSpace([]byte(resp.Text))
	}
	doc := string(raw)
	v, err := decodeJSON(doc)
	if err != nil {
		return nil, "Your final answer must be a JSON document matching the output schema; it is not valid JSON: " + err.Error()
	}
	if err := schema.validateJSON(doc, v); err != nil {
		return nil, "Your final answer does not match the output schema: " + strings.Join(err.(*ValidationError).Problems, "; ")
	}
	return inst.output(doc, v), ""
}

// outputRoom is the room a run's output is written in, allocated with
// the run: the Output, and for a text output the header of the text its
// Value holds (see textOutput).
type outputRoom struct {
	out  Output
	text string
}

// output returns the run's output, in the room allocated with the run
// when it has one.
func (inst *instance) output(raw string, v any) *Output {
	if inst.outUsed {
		return &Output{Raw: raw, Value: v}
	}
	inst.outUsed = true
	room := &inst.rooms.out
	room.out = Output{Raw: raw, Value: v}
	return &room.out
}

// textOutput is output for a text: its Value holds the text's header in
// the run's room, not an allocation of its own (see boxString).
func (inst *instance) textOutput(text string) *Output {
	if inst.outUsed {
		return inst.output(text, text)
	}
	inst.outUsed = true
	room := &inst.rooms.out
	room.text = text
	room.out = Output{Raw: text, Value: boxString(&room.text)}
	return &room.out
}

// RenderPrompt renders the first user message a run of an agent with this
// prompt starts with, from its input: the prompt function's text, else a
// string input as it is, else the input as JSON (nothing for no input).
// A checker of another runtime uses it to recognise a child's first request.
func RenderPrompt(p Prompt, input any) (string, error) { return renderPrompt(p, input) }

func renderPrompt(p Prompt, input any) (string, error) {
	if p.Render != nil {
		return p.Render(input)
	}
	if input == nil {
		return "", nil
	}
	if s, ok := input.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(input)
	return string(b), err
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// callTool runs one tool call and returns its tool message. Only a context
// error ends the run; everything else is a model-facing error.
func (inst *instance) callTool(ctx context.Context, call ToolCall) (Message, error) {
	pt := inst.p.tool(call.Name)
	var f *toolCallFrame
	var room *workRoom
	if pt != nil && pt.kind == kindWork {
		// A work call's frame has its room.
		wf := &struct {
			toolCallFrame
			work workRoom
		}{}
		f, room = &wf.toolCallFrame, &wf.work
	} else {
		f = new(toolCallFrame)
	}
	*f = toolCallFrame{Context: ctx, inst: inst, step: inst.step, call: call}
	ctx = f
	c := &f.call // both events report the same call
	inst.emitTool(EventToolCall, c, nil, nil, nil)
	var note toolNote
	content, ref, err := inst.execTool(ctx, call, pt, &note, room)
	msg := Message{Role: RoleTool, ToolCallID: call.ID, ToolName: call.Name}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return msg, err
		}
		msg.IsError = true
		content = toolErrorContent(err)
	}
	msg.Content = content
	f.result = msg // the event's own copy, apart from the history's
	inst.emitTool(EventToolResult, c, &f.result, ref, &note)
	return msg, nil
}

// toolCallFrame is one tool call in flight, in one allocation: the context
// the tool runs on (the run's, with the frame itself as the value of
// callKey, from which CallOf reads the call's CallInfo), and the call and
// its result message that the call's events point to; a work call's has
// its workRoom with it. It is 176 bytes, a work call's 256.
type toolCallFrame struct {
	context.Context
	inst   *instance // the calling run, whose id, agent and turn never change
	step   int       // the run's step at the call
	call   ToolCall
	result Message
}

// info is the CallInfo of the call.
func (f *toolCallFrame) info() CallInfo {
	inst := f.inst
	return CallInfo{Run: inst.id, Agent: inst.p.agent.ID, Turn: inst.seq, Step: f.step, CallID: f.call.ID, Tool: f.call.Name}
}

// workRoom is what a call of the work tool needs room for: the values of
// its optional arguments, which its WorkInput points into, and the
// signals a result action waits on. Nothing holds either once the call
// has returned.
type workRoom struct {
	vals workValues
	wait [3]<-chan struct{}
}

func (f *toolCallFrame) Value(key any) any {
	if key == (callKey{}) {
		return f
	}
	return f.Context.Value(key)
}

// toolNote is what a work call adds to the event of its result: its
// action, and the Work it names (setWork: it names one, maybe "").
type toolNote struct {
	action, work string
	setWork      bool
}

// emitTool reports a tool call, or its result. It builds the event out of
// callTool's frame, which is on the path of every foreground child run.
func (inst *instance) emitTool(kind EventKind, call *ToolCall, result *Message, ref *WorkRef, note *toolNote) {
	ev := Event{Kind: kind, Run: inst.id, Agent: inst.p.agent.ID, Work: inst.workID()} // see emit
	ev.Step, ev.Call, ev.Result, ev.Ref = inst.step, call, result, ref
	if note != nil {
		ev.Action = note.action
		if note.setWork {
			ev.Work = note.work
		}
	}
	inst.rt.emit(ev)
}

// execTool runs a call of the agent's tool pt (nil: it has none of the
// name); room is the room of a work call.
func (inst *instance) execTool(ctx context.Context, call ToolCall, pt *preparedTool, note *toolNote, room *workRoom) (string, *WorkRef, error) {
	if pt == nil {
		return "", nil, modelErrorf("unknown_tool", "there is no tool %q; the tools are %s", call.Name, toolNames(inst.p))
	}
	if pt.kind == kindWork {
		// Valid arguments, written plainly, are read straight into the
		// input; anything else takes the general path, for its problems.
		if in, ok := readWorkInput(pt.params, call.Arguments, &room.vals); ok {
			return inst.workTool(ctx, call, in, note, room)
		}
	}
	args, err := decodeArgs(call.Arguments)
	if err != nil {
		return "", nil, modelErrorf("invalid_arguments", "arguments of %s are not a JSON object: %v", call.Name, err)
	}
	if err := pt.params.validateJSON(call.Arguments, args); err != nil {
		return "", nil, modelErrorf("invalid_arguments", "arguments of %s: %s", call.Name, strings.Join(err.(*ValidationError).Problems, "; "))
	}
	switch pt.kind {
	case kindWork:
		return inst.workTool(ctx, call, workInputOf(args.(map[string]any), &room.vals), note, room)
	case kindFunction:
		v, err := pt.tool.Run(ctx, call, args)
		if err != nil {
			return "", nil, err
		}
		out, err := toolContent(v)
		return out, nil, err
	case kindForeground, kindBackground, kindBgTool:
		return inst.childCall(ctx, call, pt, args)
	}
	return "", nil, errorf("tool %q has no handler", call.Name)
}

// workTool runs a call of the work tool.
func (inst *instance) workTool(ctx context.Context, call ToolCall, in WorkInput, note *toolNote, room *workRoom) (string, *WorkRef, error) {
	note.action = in.Action
	if in.ID != nil {
		note.work, note.setWork = *in.ID, true
	}
	out, err := inst.rt.workCall(ctx, inst.id, inst.seq, inst.step, call, in, &room.wait)
	return out, nil, err
}

// childCall runs a call of a child tool: in the background as Work, or in
// the foreground inside the call, or answers a repeated call identity with
// what the first call produced.
func (inst *instance) childCall(ctx context.Context, call ToolCall, pt *preparedTool, args any) (string, *WorkRef, error) {
	background, _ := args.(map[string]any)[BackgroundFlag].(bool)
	background = background && pt.kind != kindForeground
	input := childInput(pt, args)
	if pt.child != nil && int(inst.depth) >= inst.rt.opts.MaxDepth {
		return "", nil, modelErrorf("depth_exceeded",
			"%s would run %d child runs deep, past the limit of %d; answer without calling it", pt.name, inst.depth+1, inst.rt.opts.MaxDepth)
	}
	var schema *Schema
	if pt.child != nil {
		schema = pt.child.agent.Prompt.Input
	}
	valid := knownValidInput(input, schema)
	lone := inst.lone // the step's only call: its identity is not seen again
	if !lone {
		if occ, err := inst.calls.seen(inst.step, call.ID, pt, call.Arguments, input, background); err != nil {
			return "", nil, err
		} else if occ != nil {
			return occ.replay()
		}
	}
	if background {
		return inst.startBackground(call, pt, input, valid)
	}
	out, err := inst.runForeground(ctx, call, pt, input, valid)
	if !lone && (err == nil || ctx.Err() == nil) { // a call its run's end cut short is not an outcome
		inst.calls.recordForeground(&call, pt.name, out, err)
	}
	return out, nil, err
}

// startBackground starts a background call as Work and answers with its
// work.ref.
func (inst *instance) startBackground(call ToolCall, pt *preparedTool, input any, valid bool) (string, *WorkRef, error) {
	ref, err := inst.startWork(call, pt, input, valid)
	if err != nil {
		return "", nil, err
	}
	if !inst.lone {
		inst.calls.record(occurrence{callID: call.ID, tool: pt.name, args: call.Arguments, background: true, text: ref.ID, target: ref.TargetID})
	}
	out, err := marshalRef(*ref)
	return out, ref, err
}

// workValues hold the work tool's optional arguments, which a WorkInput
// read from them points into (room of the call's own; see workRoom).
type workValues struct{ id, timeout, message string }

// set reads one argument of the work tool into in.
func (vals *workValues) set(in *WorkInput, name, value string) {
	switch name {
	case "action":
		in.Action = value
	case "id":
		vals.id, in.ID = value, &vals.id
	case "timeout":
		vals.timeout, in.Timeout = value, &vals.timeout
	case "message":
		vals.message, in.Message = value, &vals.message
	}
}

// readWorkInput reads the work tool's arguments straight from their
// document, without decoding it to a map, when the document is valid by
// the tool's schema and written plainly (see flatObject.readValid); ok is
// false otherwise. This is on the path of every work call. The input
// points into vals.
func readWorkInput(params *Schema, doc string, vals *workValues) (in WorkInput, ok bool) {
	ok = params.flat.readValid(doc, func(name, value string) { vals.set(&in, name, value) })
	return in, ok
}

// workInputOf reads the work tool's decoded arguments, which its schema
// has already validated (an object of strings), into an input that
// points into vals.
func workInputOf(m map[string]any, vals *workValues) WorkInput {
	var in WorkInput
	for name, v := range m {
		s, _ := v.(string)
		vals.set(&in, name, s)
	}
	return in
}

// runChild runs a foreground child inline, on the tool call's context;
// valid is knownValidInput's.
func (inst *instance) runChild(ctx context.Context, pt *preparedTool, input any, valid bool) (*Output, error) {
	child := inst.rt.newInstance(pt.child, inst.model, nil)
	child.steps, child.depth, child.inputValid = inst.steps, inst.depth+1, valid
	out, err := child.run(ctx, input, ModeForeground, inst.id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ModelError{Code: "child_failed", Message: fmt.Sprintf("%s failed: %v", pt.name, err)}
	}
	return out, nil
}

// runForeground runs a child call inline and returns its tool content: a
// BackgroundTool's result, or a child agent's exact output.
func (inst *instance) runForeground(ctx context.Context, call ToolCall, pt *preparedTool, input any, valid bool) (string, error) {
	if pt.kind == kindBgTool {
		v, err := pt.tool.Run(ctx, call, input)
		if err != nil {
			return "", err
		}
		return toolContent(v)
	}
	out, err := inst.runChild(ctx, pt, input, valid)
	if err != nil {
		return "", err
	}
	return out.Raw, nil
}

// startWork admits a background call as Work; valid is knownValidInput's.
func (inst *instance) startWork(call ToolCall, pt *preparedTool, input any, valid bool) (*WorkRef, error) {
	rt := inst.rt
	if pt.kind == kindBgTool {
		return rt.registry.accept(inst.id, inst.seq, pt.name, pt.target, childRun{}, func(ctx context.Context, _ *work) (*Output, error) {
			// The tool runs as Work, outside any agent run: give it the
			// runtime, so that Sleep and Await wait on the runtime's clock
			// and executor (virtual in a simulation), not the wall clock.
			ctx = &runContext{Context: ctx, rt: rt}
			v, err := pt.tool.Run(ctx, call, input)
			if err != nil {
				return nil, err
			}
			s, err := toolContent(v)
			if err != nil {
				return nil, err
			}
			return &Output{Raw: s, Value: v}, nil
		})
	}
	return rt.registry.accept(inst.id, inst.seq, pt.name, pt.target,
		childRun{p: pt.child, model: inst.model, depth: inst.depth + 1, input: input, inputValid: valid}, nil)
}

// childRun is what a background child agent's run starts from, held by
// its Work (no function of its own to run it); the run that started it is
// the Work's owner.
type childRun struct {
	p     *prepared
	model string
	input any
	depth int32
	// inputValid: see instance.inputValid.
	inputValid bool
}

// runBackground runs a background child agent as its Work.
func (rt *Runtime) runBackground(ctx context.Context, w *work) (*Output, error) {
	c := &w.child
	child := rt.newInstance(c.p, c.model, w)
	child.depth, child.inputValid = c.depth, c.inputValid
	return child.run(ctx, c.input, ModeBackground, w.owner)
}

// childInput is a child call's input, read from its arguments: the
// arguments are the call's own (decoded for it alone), so a backgroundable
// child's flag is taken out of them in place. A foreground child's tool
// has no such flag: its input is the arguments as they came.
func childInput(pt *preparedTool, args any) any {
	m, _ := args.(map[string]any)
	if !pt.hasInput {
		return nil
	}
	if pt.wrapped {
		return m["input"]
	}
	if pt.kind != kindForeground {
		delete(m, BackgroundFlag)
	}
	return m
}

func decodeArgs(s string) (any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(s)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("got %s", jsonKind(v))
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func toolContent(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case json.RawMessage:
		return string(t), nil
	case []byte:
		return string(t), nil
	case nil:
		return "null", nil
	}
	return marshal(v)
}

func toolNames(p *prepared) string {
	names := make([]string, len(p.tools))
	for i, t := range p.tools {
		names[i] = t.name
	}
	return strings.Join(names, ", ")
}
