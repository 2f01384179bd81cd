package scenarios

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
)

func (l *loader) patterns(n *node, what string) []Pattern {
	items := l.seq(n, what)
	out := make([]Pattern, 0, len(items))
	for i, it := range items {
		out = append(out, l.pattern(it, fmt.Sprintf("%s pattern %d", what, i+1), ""))
	}
	if n != nil && len(items) == 0 {
		l.errorf(n, "%s needs at least one pattern", what)
	}
	return out
}

// pattern reads {kind: {fields}}. With want set (script conditions), the
// kind must be that one, and a bare field mapping is read as that kind.
func (l *loader) pattern(n *node, what string, want trace.Kind) Pattern {
	if n == nil {
		return Pattern{} // the caller reports the missing key
	}
	var kind string
	var v *node
	if want != "" && n.kind == mapNode && len(n.keys) > 0 && slices.Contains(patternFields, scalarString(n.keys[0])) {
		kind, v = string(want), n
	} else {
		var ok bool
		kind, v, ok = l.oneOf(n, what, "pattern kind", patternKinds...)
		if !ok {
			return Pattern{}
		}
	}
	p := Pattern{}
	switch kind {
	case "entry":
	case "result":
		p.Kind = trace.ToolResult
	case "work-call":
		p.Kind, p.Tool = trace.ToolResult, core.WorkToolName
	default:
		p.Kind = trace.Kind(kind)
	}
	if want != "" && p.Kind != want {
		l.errorf(n, "%s must be a %s pattern, such as {%s: {status: {state: completed}}} or just its fields; found a %s pattern", what, want, want, kind)
	}
	f := l.fields(v, what, patternFields...)
	for i := range patternTable {
		field := &patternTable[i]
		field.decode(l, f[field.key], what+" "+field.key, &p)
	}
	return p
}

// offset reads a virtual time since the start of the run, such as 72h.
func (l *loader) offset(n *node, what string) *time.Duration {
	if n == nil {
		return nil
	}
	d := l.duration(n, what)
	return &d
}

func (l *loader) rowPattern(n *node, what string) *RowPattern {
	f := l.fields(n, what, statusRowKeys...)
	return &RowPattern{
		Work:            l.ref(f["work"], what+" work"),
		Label:           l.str(f["label"], what+" label"),
		State:           l.state(f["state"], what+" state"),
		ResultAvailable: l.optBool(f["result-available"], what+" result-available"),
		Contains:        l.str(f["contains"], what+" contains"),
	}
}

func (l *loader) state(n *node, what string) string {
	s := l.str(n, what)
	if p := notAWorkState(s); p != "" {
		l.errorf(n, "%s: %s", what, p)
	}
	return s
}

func (l *loader) anyAgentHasTool(name string) bool {
	if l.platform && slices.Contains(platform.ToolNames(), name) {
		return true
	}
	for _, id := range l.order {
		a := l.agents[id]
		if _, ok := a.tools[name]; ok || (name == core.WorkToolName && a.hasBackground()) {
			return true
		}
	}
	return false
}

// MatchRequest matches a request pattern against a live provider request,
// the way a script's when condition does, and with the meaning every key has
// in an expectation: message and guidance read the messages new in this
// request, history and history-guidance the run's whole history, and
// references resolve against the work.refs the history holds.
func MatchRequest(p *Pattern, req *core.Request) bool {
	ok, _ := requestDiff(p, nil, req, false)
	return ok
}

// ExplainRequest says, field by field, which part of the request fails the
// pattern (nil when it matches): what a script that ran dry shows for each
// unused turn.
func ExplainRequest(p *Pattern, req *core.Request) []string {
	_, why := requestDiff(p, nil, req, true)
	return why
}

// requestDiff is MatchRequest and ExplainRequest; c, when not nil, is p
// compiled, which matching reads instead of compiling p anew.
func requestDiff(p *Pattern, c *compiled, req *core.Request, explain bool) (bool, []string) {
	// A script asks this of every request of its agent: build only what
	// the pattern reads.
	if !explain && (p.Agent != "" && p.Agent != req.Agent || p.Step != 0 && p.Step != req.Step) {
		return false, nil
	}
	if !explain && c != nil && (c.compares|c.scans)&^requestFields == 0 {
		// The agent and step hold (above): what is left is the kind and
		// the tools, read off the request without building an entry.
		return (p.Kind == "" || p.Kind == trace.Request) && offersAsAsked(p, req.Tools), nil
	}
	// The pattern's fields are functions of the table, which the compiler
	// cannot see through: the entry and trace they read would escape to
	// the heap on every call. They are reused instead.
	m := requestMatches.Get().(*requestMatch)
	defer m.put()
	e, t, part := &m.entry, &m.trace, &m.part
	n := min(max(req.NewMessages, 0), len(req.Messages))
	old, fresh := req.Messages[:len(req.Messages)-n], req.Messages[len(req.Messages)-n:]
	*part = trace.RequestPart{Messages: fresh}
	*e = trace.Entry{Kind: trace.Request, Agent: req.Agent, Run: req.Run, Step: req.Step, Part: part}
	if (p.History != "" || p.HistoryGuidance != "") && len(old) > 0 {
		// The history before this request, as the run's earlier request.
		m.earlier = trace.RequestPart{Messages: old}
		t.Entries = append(t.Entries, trace.Entry{Kind: trace.Request, Agent: req.Agent, Run: req.Run, Part: &m.earlier})
	}
	if p.Tools != nil || len(p.ToolsInclude) > 0 || len(p.ToolsExclude) > 0 {
		for _, t := range req.Tools {
			m.tools = append(m.tools, t.Name)
		}
		part.Tools = m.tools
	}
	refs := !p.Work.IsZero() || p.Status != nil && !p.Status.Work.IsZero()
	if req.Status != nil && (refs || p.Status != nil || p.NoStatus) {
		for _, r := range req.Status.Rows {
			m.status = append(m.status, r.String())
		}
		part.Status = m.status
	}
	if refs {
		for _, msg := range req.Messages {
			if msg.Role != core.RoleTool || msg.IsError {
				continue
			}
			if ref, ok := parseRef(msg.Content); ok {
				t.Entries = append(t.Entries, trace.Entry{Kind: trace.ToolResult, Agent: req.Agent, Run: req.Run,
					Call: &core.ToolCall{ID: msg.ToolCallID, Name: msg.ToolName}, Ref: &ref})
			}
		}
	}
	if explain {
		return p.Match(t, e), p.Mismatches(t, e)
	}
	if c != nil {
		// A copy: matching keeps what it resolved of the trace in the
		// compiled pattern (compiled.resolve), and c is the condition's,
		// asked of request after request by runs at once, the trace
		// built each time in storage reused.
		m := *c
		return m.match(t, e), nil
	}
	return p.Match(t, e), nil
}

// requestFields holds the bits of the pattern fields a request holds as it
// is (agent, step and the tools' fields): a compiled pattern that sets no
// other is matched against the request itself (requestDiff).
var requestFields = func() uint64 {
	var bits uint64
	for i := range patternTable {
		switch patternTable[i].key {
		case "agent", "step", "tools", "tools-include", "tools-exclude":
			bits |= 1 << i
		}
	}
	return bits
}()

// offersAsAsked reports whether tools, a request's, are what p's tools,
// tools-include and tools-exclude ask for, as the fields match the names
// of an entry recording the request.
func offersAsAsked(p *Pattern, tools []core.ToolSpec) bool {
	// A loop of its own, not slices.ContainsFunc's call of a function per
	// tool: a script asks this of every request of its agent, whose tools
	// are the platform's some twenty.
	offers := func(name string) bool {
		for i := range tools {
			if tools[i].Name == name {
				return true
			}
		}
		return false
	}
	if p.Tools != nil {
		if len(p.Tools) != len(tools) {
			return false
		}
		for i := range tools {
			if tools[i].Name != p.Tools[i] {
				return false
			}
		}
	}
	for _, name := range p.ToolsInclude {
		if !offers(name) {
			return false
		}
	}
	for _, name := range p.ToolsExclude {
		if offers(name) {
			return false
		}
	}
	return true
}

// requestMatch is the entry and trace MatchRequest builds a request into,
// with the room for the entry's tool names and status rows.
type requestMatch struct {
	entry trace.Entry
	trace trace.Trace
	// part is the entry's, earlier the part of the run's earlier request.
	part, earlier trace.RequestPart
	// tools and status are the room for the part's tool names and rows.
	tools, status []string
}

var requestMatches = sync.Pool{New: func() any { return new(requestMatch) }}

// put clears what the match held (so that the pool keeps no request
// alive) and returns it to the pool.
func (m *requestMatch) put() {
	m.entry, m.part, m.earlier = trace.Entry{}, trace.RequestPart{}, trace.RequestPart{}
	clear(m.trace.Entries)
	m.trace.Entries = m.trace.Entries[:0]
	clear(m.tools)
	m.tools = m.tools[:0]
	clear(m.status)
	m.status = m.status[:0]
	requestMatches.Put(m)
}

// allTools lists every tool name of every agent, with work for agents that
// get it.
func (l *loader) allTools() []string {
	var all []string
	for _, id := range l.order {
		all = append(all, l.callable(l.agents[id])...)
	}
	return uniq(all)
}
