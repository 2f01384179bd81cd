package serve

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
)

// session turns the requests a client sends, and the answers it gets,
// into the run's semantic trace, in the format of an in-process run: run
// starts and ends, requests (the tools offered, the messages new since the
// run's previous request, the status rows the client's runtime wrote),
// responses, tool calls and their results, and the Work the results and
// status blocks show. Work states are known only as the client shows them,
// so a Work entry records a state seen, not every state the client's
// runtime went through.
//
// Some facts are known only later than the entry that needs them (the
// Work a background child runs as is known when its parent's next request
// carries the work.ref, which may come after the child's first request),
// so entries are kept here and completed when the session ends.
type session struct {
	s       *Server
	entries []slot
	runs    map[string][]*run // by agent id
	works   map[string]*workObs
	// waiting are child calls whose child run has not started yet.
	waiting  []*callObs
	findings []string
	conf     []conformance
	pending  []conformance
	requests int
	remap    []int // entry index → index in the finished trace, -1 dropped
}

type slot struct {
	e    trace.Entry
	drop bool
}

// run is one agent run as the client's requests show it.
type run struct {
	id      string
	ordinal int // among its agent's runs, from 1: how a fault names it
	agent   *agentInfo
	mode    string
	parent  *run
	work    string // the Work it runs as, once known
	step    int
	// history is the last request's messages (without the system text
	// and the status block); answered the assistant message the last
	// answer added, nil after a failed step (a retry resends the history).
	history  []core.Message
	answered *core.Message
	calls    map[string]*callObs // the last answer's calls, by id
	startAt  int
	endAt    int // a provisional run end, dropped if the run goes on; -1
	statusAt map[string]bool
}

// callObs is a tool call the server answered with.
type callObs struct {
	run        *run
	step       int
	call       core.ToolCall
	child      *childTool
	background bool
	first      string // the child's rendered first message
	firstOK    bool
	childRun   *run
	work       string
	answered   bool
}

// workObs is what the client has shown of one Work item.
type workObs struct {
	id, label, target string
	owner             *run
	createdAt         int
	first, state      lifecycle.State // the first state seen, the last
	detached          bool
	childRun          *run
	sends             []string // accepted guidance not yet seen delivered
}

// conformance is a broken rule of the contract that only the wire shows
// (a schema, a status block's format), found at an entry.
type conformance struct {
	name, msg string
	at        int
}

// turn is one request being answered.
type turn struct {
	run *run
	req *core.Request
}

func (ss *session) init(s *Server) {
	ss.s = s
	ss.runs = map[string][]*run{}
	ss.works = map[string]*workObs{}
}

func (ss *session) add(at time.Time, e trace.Entry) int {
	e.At = at.Sub(ss.s.start).Round(time.Millisecond) // real time: milliseconds are plenty
	ss.entries = append(ss.entries, slot{e: e})
	return len(ss.entries) - 1
}

// violate notes a broken rule at the next entry flush records.
func (ss *session) violate(name string, format string, args ...any) {
	ss.pending = append(ss.pending, conformance{name: name, msg: fmt.Sprintf(format, args...)})
}

// flush places the rules broken so far at an entry.
func (ss *session) flush(at int) {
	for _, c := range ss.pending {
		c.at = at
		ss.conf = append(ss.conf, c)
	}
	ss.pending = ss.pending[:0]
}

// receive reads one request of an identified agent: which run it belongs
// to, what is new in it, what its tool results and status block show.
func (ss *session) receive(a *agentInfo, req *chatRequest, now time.Time) (*turn, error) {
	system, body, status, statusIdx, err := ss.split(req)
	if err != nil {
		return nil, err
	}
	msgs := make([]core.Message, len(body))
	for i, m := range body {
		msgs[i] = coreMessage(m)
	}
	ss.requests++
	r := ss.match(a, msgs)
	isNew := r == nil
	if isNew {
		r = ss.start(a, msgs, now)
	} else if r.endAt >= 0 {
		// The run goes on after what looked like its end: a retry after
		// a failed step, or a correction of its final answer.
		ss.entries[r.endAt].drop = true
		r.endAt = -1
	}
	prior := 0
	if !isNew {
		// The messages resent are those the run's last request had, with
		// what was learnt of them then (tool names, guidance).
		prior = copy(msgs, r.history)
	}
	fresh := msgs[prior:]
	for i := range fresh {
		m := &fresh[i]
		if m.Role == core.RoleTool {
			if c := r.calls[m.ToolCallID]; c != nil {
				m.ToolName = c.call.Name
			}
		}
	}
	ss.results(r, fresh, now)
	ss.guidance(r, fresh, isNew, now)

	var ps core.ParsedStatus
	if status != nil {
		ps, _ = core.ParseStatus(status.text)
	}
	r.step++
	part := &trace.RequestPart{Messages: fresh}
	en := trace.Entry{Kind: trace.Request, Run: r.id, Agent: a.agent.ID, Step: r.step, Part: part}
	for _, t := range req.Tools {
		part.Tools = append(part.Tools, t.Function.Name)
	}
	if status != nil {
		part.Status, part.Omitted = ps.Lines, ps.Block.Omitted
		ss.statusRows(r, ps, now)
	}
	if status != nil && len(ps.Problems) > 0 {
		ss.violate("status-format", "a status block of %s (request %d) is not in the contract's format: %s", r.id, r.step, strings.Join(ps.Problems, "; "))
	}
	if statusIdx >= 0 {
		ss.violate("status-not-stored", "request %d of %s keeps a status block in its history (messages[%d]); the block is regenerated for every request, trailing, and never stored", r.step, r.id, statusIdx)
	}
	ss.checkTools(r, req.Tools)
	ss.flush(ss.add(now, en))

	creq := &core.Request{Model: req.Model, Agent: a.agent.ID, Run: r.id, Step: r.step, System: system, Messages: msgs, NewMessages: len(fresh)}
	for _, t := range req.Tools {
		creq.Tools = append(creq.Tools, core.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if status != nil {
		blk := ps.Block
		creq.Status = &blk
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0 {
		if sch, err := core.ParseSchema(string(rf.JSONSchema.Schema)); err == nil {
			creq.Output = sch
		}
	}
	r.history, r.answered = msgs, nil
	return &turn{run: r, req: creq}, nil
}

// split separates a request's system text (a leading system message), its
// status block (a trailing message that starts with the header) and the
// history between them. A status block anywhere else was stored in the
// history: its index is returned, and it stays out of the history.
func (ss *session) split(req *chatRequest) (system string, body []chatMessage, status *chatMessage, storedAt int, err error) {
	storedAt = -1
	ms := req.Messages
	if r := ms[0].Role; r == "system" || r == "developer" {
		system, ms = ms[0].text, ms[1:]
	}
	if n := len(ms); n > 0 && ms[n-1].Role != "assistant" && ms[n-1].Role != "tool" && strings.HasPrefix(ms[n-1].text, core.StatusHeader) {
		status, ms = &ms[n-1], ms[:n-1]
	}
	offset := len(req.Messages) - len(ms)
	if status != nil {
		offset--
	}
	for i, m := range ms {
		if m.Role == "system" || m.Role == "developer" {
			if strings.HasPrefix(m.text, core.StatusHeader) {
				storedAt = i + offset
				continue
			}
			return "", nil, nil, -1, fmt.Errorf("messages[%d] is a %s message inside the conversation; the semantic request has one system text, first, and the status block, last", i+offset, m.Role)
		}
		body = append(body, m)
	}
	return system, body, status, storedAt, nil
}

func coreMessage(m chatMessage) core.Message {
	switch m.Role {
	case "assistant":
		out := core.Message{Role: core.RoleAssistant, Content: m.text}
		for _, c := range m.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, core.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		return out
	case "tool":
		return core.Message{Role: core.RoleTool, Content: m.text, ToolCallID: m.ToolCallID, IsError: isToolError(m.text)}
	}
	return core.Message{Role: core.RoleUser, Content: m.text}
}

// isToolError reads the contract's tool error form, {"error": ...}.
func isToolError(content string) bool {
	if !strings.HasPrefix(strings.TrimSpace(content), "{") {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(content), &obj) != nil {
		return false
	}
	_, ok := obj["error"]
	return ok
}

// match finds the run a request continues: the one of its agent whose last
// request and answer the request's history starts with (the longest, when
// several do). A client resends the whole history with every request.
func (ss *session) match(a *agentInfo, msgs []core.Message) *run {
	var best *run
	bestLen := -1
	for _, r := range ss.runs[a.agent.ID] {
		n := len(r.history)
		if r.answered != nil {
			n++
		}
		if n > len(msgs) || n <= bestLen {
			continue
		}
		ok := true
		for i := range r.history {
			if !sameMessage(r.history[i], msgs[i]) {
				ok = false
				break
			}
		}
		if ok && r.answered != nil && !sameMessage(*r.answered, msgs[len(r.history)]) {
			ok = false
		}
		if ok {
			best, bestLen = r, n
		}
	}
	return best
}

// sameMessage compares what a client resends of a message: its role, its
// text, and its tool calls by id and name (a client may re-encode their
// arguments).
func sameMessage(a, b core.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i].ID != b.ToolCalls[i].ID || a.ToolCalls[i].Name != b.ToolCalls[i].Name {
			return false
		}
	}
	return true
}

// start begins a run: a child run if a call that starts its agent is
// waiting for one (the one whose input renders to its first message, else
// the oldest), else a top-level run.
func (ss *session) start(a *agentInfo, msgs []core.Message, now time.Time) *run {
	r := &run{agent: a, endAt: -1, calls: map[string]*callObs{}, ordinal: len(ss.runs[a.agent.ID]) + 1}
	r.id = a.agent.ID + "#" + strconv.Itoa(r.ordinal)
	ss.runs[a.agent.ID] = append(ss.runs[a.agent.ID], r)
	first := ""
	if len(msgs) > 0 && msgs[0].Role == core.RoleUser {
		first = msgs[0].Content
	}
	pick := -1
	for i, c := range ss.waiting {
		if c.child.agent != a.agent {
			continue
		}
		if pick < 0 {
			pick = i
		}
		if c.firstOK && c.first == first {
			pick = i
			break
		}
	}
	part := &trace.RunPart{}
	en := trace.Entry{Kind: trace.RunStart, Run: r.id, Agent: a.agent.ID, Part: part}
	switch {
	case pick >= 0:
		c := ss.waiting[pick]
		ss.waiting = append(ss.waiting[:pick], ss.waiting[pick+1:]...)
		c.childRun, r.parent = r, c.run
		r.mode = string(core.ModeForeground)
		if c.background {
			r.mode = string(core.ModeBackground)
			r.work = c.work
			if w := ss.works[c.work]; w != nil {
				w.childRun = r
			}
		}
		part.Parent = c.run.id
	case a.top:
		r.mode = string(core.ModeTop)
	default:
		ss.findings = append(ss.findings, fmt.Sprintf("%s started, but no call of a parent started %s and it is not a top-level agent of the scenario", r.id, a.agent.ID))
	}
	part.Mode = r.mode
	r.startAt = ss.add(now, en)
	return r
}

// results records the tool results a request brings and what they show of
// Work: the work.refs background calls returned, the states projections
// and receipts carry, detaches and accepted guidance.
func (ss *session) results(r *run, fresh []core.Message, now time.Time) {
	for i := range fresh {
		m := &fresh[i]
		if m.Role != core.RoleTool {
			continue
		}
		c := r.calls[m.ToolCallID]
		if c == nil {
			ss.findings = append(ss.findings, fmt.Sprintf("request %d of %s answers tool call %q, which the model's last answer did not make", r.step+1, r.id, clip(m.ToolCallID, 80)))
			continue
		}
		if c.answered {
			continue
		}
		c.answered = true
		call := c.call
		en := trace.Entry{Kind: trace.ToolResult, Run: r.id, Agent: r.agent.agent.ID, Step: c.step, Call: &call, Content: m.Content, IsError: m.IsError}
		switch {
		case c.child != nil && !m.IsError:
			ss.childResult(r, c, &en, now)
		case call.Name == core.WorkToolName && r.agent.background:
			ss.workResult(r, c, &en, now)
		}
		ss.flush(ss.add(now, en))
	}
	for _, c := range r.calls {
		if !c.answered && !hasToolMessage(fresh, c.call.ID) && len(fresh) > 0 {
			ss.findings = append(ss.findings, fmt.Sprintf("request %d of %s has no tool result for call %s (%s) of response %d", r.step+1, r.id, c.call.ID, c.call.Name, c.step))
			c.answered = true
		}
	}
}

func hasToolMessage(ms []core.Message, id string) bool {
	for _, m := range ms {
		if m.Role == core.RoleTool && m.ToolCallID == id {
			return true
		}
	}
	return false
}

// childResult reads the result of a child call: a work.ref for a
// background call, which creates the Work.
func (ss *session) childResult(r *run, c *callObs, en *trace.Entry, now time.Time) {
	var ref core.WorkRef
	content := strings.TrimSpace(en.Content)
	if !strings.HasPrefix(content, "{") || json.Unmarshal([]byte(content), &ref) != nil || ref.Kind != core.WorkRefKind || ref.ID == "" {
		return
	}
	en.Ref, en.Work = &ref, ref.ID
	if !c.background {
		ss.violate("foreground-returns-output", "the foreground %s call %s of %s returned a work.ref; a call without run_in_background: true returns the child's exact output", c.call.Name, c.call.ID, r.id)
	}
	if g := ref.Guarantees; g.Execution != core.ProcessLocal || g.Rejoin != core.ProcessLocal {
		ss.violate("work-ref-shape", "the work.ref %s of %s has guarantees %+v; both execution and rejoin are process-local", ref.ID, r.id, g)
	}
	if c.child.agent != nil && ref.TargetID != c.child.agent.ID {
		ss.violate("work-ref-shape", "the work.ref %s of %s has targetId %q; it is the child agent's id, %q", ref.ID, r.id, ref.TargetID, c.child.agent.ID)
	}
	if ss.works[ref.ID] != nil {
		return // the same call identity answered again
	}
	w := &workObs{id: ref.ID, label: c.call.Name, target: ref.TargetID, owner: r, childRun: c.childRun}
	w.createdAt = ss.add(now, trace.Entry{Kind: trace.Work, Run: r.id, Agent: ref.TargetID, Work: ref.ID, Label: c.call.Name, Part: &trace.WorkPart{Transition: "work.ref"}})
	ss.works[ref.ID] = w
	c.work = ref.ID
	if c.childRun != nil {
		c.childRun.work = ref.ID
	}
}

// workResult reads a work tool result: the action and id it was called
// with, and what it shows of the Work.
func (ss *session) workResult(r *run, c *callObs, en *trace.Entry, now time.Time) {
	var in core.WorkInput
	if json.Unmarshal([]byte(c.call.Arguments), &in) != nil {
		return
	}
	en.Action = in.Action
	if in.ID != nil {
		en.Work = *in.ID
	}
	if en.IsError {
		return
	}
	w := ss.works[en.Work]
	own := w != nil && w.owner == r
	switch in.Action {
	case "list":
		var list []core.WorkStatus
		if json.Unmarshal([]byte(en.Content), &list) == nil {
			for _, st := range list {
				if x := ss.works[st.Work.ID]; x != nil && x.owner == r {
					ss.observe(x, st.State, now)
				}
			}
		}
	case "status", "result":
		if !own || en.Content == `{"status":"not_found"}` {
			return
		}
		var st core.WorkStatus
		if json.Unmarshal([]byte(en.Content), &st) == nil && st.Work.Kind == core.WorkRefKind {
			ss.observe(w, st.State, now)
		} else if in.Action == "result" {
			ss.observe(w, lifecycle.Completed, now) // only a completed Work's result is its output
		}
	case "cancel":
		var rec core.CancelReceipt
		if own && json.Unmarshal([]byte(en.Content), &rec) == nil && rec.State != "" {
			ss.observe(w, rec.State, now)
		}
	case "detach":
		var rec core.DetachReceipt
		if own && json.Unmarshal([]byte(en.Content), &rec) == nil && rec.Detached {
			w.detached = true
			ss.add(now, trace.Entry{Kind: trace.Detach, Run: r.id, Agent: w.target, Work: w.id, Label: w.label, Part: &trace.WorkPart{To: string(w.state)}})
		}
	case "send":
		var rec core.SendReceipt
		if own && json.Unmarshal([]byte(en.Content), &rec) == nil && rec.Outcome == "accepted" {
			if in.Message != nil {
				w.sends = append(w.sends, *in.Message)
			}
			ss.add(now, trace.Entry{Kind: trace.Send, Run: r.id, Agent: w.target, Work: w.id, Label: w.label, Part: &trace.WorkPart{Cursor: rec.Cursor}})
		}
	}
}

// observe records a state the client showed for Work: the Work's first
// entry takes the first state seen; a later different state is an entry
// of its own.
func (ss *session) observe(w *workObs, state lifecycle.State, now time.Time) {
	switch {
	case w.state == "":
		w.first, w.state = state, state
	case w.state != state:
		ss.add(now, trace.Entry{Kind: trace.Work, Run: w.owner.id, Agent: w.target, Work: w.id, Label: w.label,
			Part: &trace.WorkPart{From: string(w.state), To: string(state), Transition: "observed"}})
		w.state = state
	}
}

// statusRows reads the rows of a status block: each names Work its owner
// can see, in the state the row shows.
func (ss *session) statusRows(r *run, ps core.ParsedStatus, now time.Time) {
	for _, row := range ps.Block.Rows {
		w := ss.works[row.ID]
		switch {
		case w == nil:
			ss.violate("status-owner-only", "a status row of %s names %s, which no work.ref returned to it", r.id, row.ID)
		case w.owner != r:
			ss.violate("status-owner-only", "a status row of %s names %s, which belongs to %s", r.id, row.ID, w.owner.id)
		case w.detached:
			ss.violate("status-owner-only", "a status row of %s names %s, which it detached", r.id, row.ID)
		default:
			ss.observe(w, row.State, now)
		}
	}
}

// guidance marks the user messages of a background child's request that
// are guidance its parent sent, and records their delivery.
func (ss *session) guidance(r *run, fresh []core.Message, isNew bool, now time.Time) {
	w := ss.works[r.work]
	if isNew || w == nil || len(w.sends) == 0 {
		return
	}
	n := 0
	for i := range fresh {
		m := &fresh[i]
		if m.Role == core.RoleUser && len(w.sends) > 0 && m.Content == w.sends[0] {
			m.Guidance = true
			w.sends = w.sends[1:]
			n++
		}
	}
	if n > 0 {
		ss.add(now, trace.Entry{Kind: trace.Guidance, Run: r.id, Agent: r.agent.agent.ID, Work: w.id, Step: r.step + 1, Part: &trace.WorkPart{Cursor: strconv.Itoa(n)}})
	}
}

// answer records what the model answered (or how the step failed), the
// calls the client is now expected to make, and, when the answer ends the
// run, its provisional end.
func (ss *session) answer(t *turn, resp *core.Response, err error, now time.Time) {
	r := t.run
	part, endPart := &trace.ResponsePart{}, &trace.RunPart{Mode: r.mode}
	en := trace.Entry{Kind: trace.Response, Run: r.id, Agent: r.agent.agent.ID, Step: r.step, Part: part}
	end := trace.Entry{Kind: trace.RunEnd, Run: r.id, Agent: r.agent.agent.ID, Part: endPart}
	if err != nil {
		part.Error = err.Error()
		ss.add(now, en)
		endPart.Error = fmt.Sprintf("agent %q step %d: %v", r.agent.agent.ID, r.step, err)
		r.endAt = ss.add(now, end)
		return
	}
	if resp == nil {
		resp = &core.Response{}
	}
	part.Text, part.Output, part.Calls = resp.Text, resp.Output, resp.ToolCalls
	ss.add(now, en)
	msg := core.Message{Role: core.RoleAssistant, Content: responseText(resp), ToolCalls: resp.ToolCalls}
	r.answered = &msg
	r.calls = map[string]*callObs{}
	for _, call := range resp.ToolCalls {
		c := &callObs{run: r, step: r.step, call: call}
		r.calls[call.ID] = c
		cp := call
		ss.add(now, trace.Entry{Kind: trace.ToolCall, Run: r.id, Agent: r.agent.agent.ID, Step: r.step, Call: &cp})
		child, ok := r.agent.children[call.Name]
		if !ok {
			continue
		}
		c.child = &child
		c.background = child.background && core.RunsInBackground(call.Arguments)
		if child.agent != nil {
			if in, ok := childInput(child.agent, call.Arguments); ok {
				c.first, c.firstOK = "", false
				if s, err := core.RenderPrompt(child.agent.Prompt, in); err == nil {
					c.first, c.firstOK = s, true
				}
			}
			ss.waiting = append(ss.waiting, c)
		}
	}
	if len(resp.ToolCalls) == 0 {
		end.Content = responseText(resp)
		r.endAt = ss.add(now, end)
	}
}

// observed completes the entries (the state each Work was first seen in,
// the Work each background child ran as) and returns the run as observed.
func (ss *session) observed() harness.Observed {
	for _, w := range ss.works {
		e := &ss.entries[w.createdAt].e
		part := e.EditWork()
		part.To = string(w.first)
		if part.To == "" {
			part.To = string(lifecycle.Queued) // never seen since its work.ref: accepted, so at least queued
		}
	}
	for _, rs := range ss.runs {
		for _, r := range rs {
			if r.mode == string(core.ModeBackground) {
				ss.entries[r.startAt].e.Work = r.work
				if r.endAt >= 0 {
					ss.entries[r.endAt].e.Work = r.work
				}
			}
		}
	}
	ss.remap = make([]int, len(ss.entries))
	out := make([]trace.Entry, 0, len(ss.entries))
	for i, sl := range ss.entries {
		if sl.drop {
			ss.remap[i] = -1
			continue
		}
		ss.remap[i] = len(out)
		e := sl.e
		e.Seq = len(out) + 1
		out = append(out, e)
	}
	elapsed := ss.s.clock.Now().Sub(ss.s.start).Round(time.Millisecond)
	return harness.Observed{Trace: &trace.Trace{Name: ss.s.sc.Name, Start: ss.s.start, Entries: out},
		Findings: append([]string(nil), ss.findings...), Steps: ss.requests, Elapsed: elapsed}
}

// violations are the conformance problems, at their entries in the trace
// observed returned.
func (ss *session) violations() []harness.Violation {
	var out []harness.Violation
	for _, c := range ss.conf {
		v := harness.Violation{Invariant: c.name, Message: c.msg}
		for at := c.at; at < len(ss.remap); at++ {
			if ss.remap[at] >= 0 {
				v.Entry = ss.remap[at] + 1
				break
			}
		}
		out = append(out, v)
	}
	return out
}
