package scenarios

// The script section: what the model does at each step of each agent.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/scripted"
)

// scripts reads per-agent turn lists. A key "agent#2" scripts the second run
// of the agent only.
func (l *loader) scripts(n *node) []Script {
	if n == nil {
		return nil
	}
	if n.kind != mapNode {
		l.errorf(n, "script must be a mapping from agent id to a list of turns, found %s", n.describe())
		return nil
	}
	var out []Script
	for i, k := range n.keys {
		key := scalarString(k)
		id, nth := key, 0
		if j := strings.LastIndexByte(key, '#'); j >= 0 {
			v, err := strconv.Atoi(key[j+1:])
			if err != nil || v < 1 {
				l.errorf(k, "script key %q: the run number after # must be a positive integer", key)
				continue
			}
			id, nth = key[:j], v
		}
		a, ok := l.agents[id]
		if !ok {
			if real, isRunName := l.runNames[id]; isRunName {
				l.errorf(k, "script for %q, which is the run's name for agent %q; scripts are keyed by agent id, so write %q", id, real, real)
			} else {
				l.errorf(k, "%s", undeclaredAgent(id, l.order))
			}
			continue
		}
		items := l.seq(n.vals[i], "the script of "+strconv.Quote(key))
		turns := make([]scripted.Turn, 0, len(items))
		for j, it := range items {
			turns = append(turns, l.turn(a, it, fmt.Sprintf("turn %d of %q", j+1, key)))
		}
		out = append(out, Script{Agent: id, Run: nth, Turns: turns})
	}
	return out
}

func (l *loader) turn(a *agentDecl, n *node, what string) scripted.Turn {
	f := l.fields(n, what, turnKeys...)
	unchecked := l.boolean(f["unchecked"], what+" unchecked")
	t := scripted.Turn{Label: what, Text: l.str(f["text"], what+" text"), Latency: l.duration(f["latency"], what+" latency"),
		Repeat: l.boolean(f["repeat"], what+" repeat")}
	if t.Label = l.str(f["label"], what+" label"); t.Label == "" {
		t.Label = what
	}
	acts := 0
	for _, k := range []string{"call", "calls", "text", "output", "error"} {
		if f[k] != nil {
			acts++
		}
	}
	if acts == 0 {
		l.errorf(n, "%s does nothing: give call, calls, text, output or error", what)
	}
	if f["error"] != nil && acts > 1 {
		l.errorf(f["error"], "%s: a turn that fails with error cannot also answer", what)
	}
	if f["call"] != nil && f["calls"] != nil {
		l.errorf(f["calls"], "%s: give call (one tool call) or calls (several), not both", what)
	}
	if f["args"] != nil && f["call"] == nil {
		l.errorf(f["args"], "%s: args belong to a call", what)
	}
	if f["id"] != nil && f["call"] == nil {
		l.errorf(f["id"], "%s: id belongs to a call", what)
	}
	if cn := f["call"]; cn != nil {
		t.Calls = append(t.Calls, l.call(a, cn, f["args"], f["id"], what, unchecked))
	}
	for j, cn := range l.seq(f["calls"], what+" calls") {
		cf := l.fields(cn, fmt.Sprintf("call %d of %s", j+1, what), callKeys...)
		if cf["tool"] == nil {
			l.errorf(cn, "call %d of %s is missing key \"tool\"", j+1, what)
			continue
		}
		t.Calls = append(t.Calls, l.call(a, cf["tool"], cf["args"], cf["id"], what, unchecked))
	}
	if on := f["output"]; on != nil {
		if !a.declaresOutput {
			l.errorf(on, "%s gives a structured output, but %q has no output schema (add prompt.output, or use text)", what, a.id)
		}
		raw, err := on.toJSON()
		if err != nil {
			l.errorf(on, "%s output: %v", what, err)
		}
		t.Output = json.RawMessage(raw)
	}
	if en := f["error"]; en != nil {
		se := &ScriptedError{Message: l.str(en, what+" error")}
		if sn := f["error-status"]; sn != nil {
			if se.Status = l.integer(sn, what+" error-status", 400); se.Status > 599 {
				l.errorf(sn, "%s error-status must be an HTTP error status, 400 to 599, such as 429 or 503; found %d", what, se.Status)
			}
		}
		t.Err = se
	} else if sn := f["error-status"]; sn != nil {
		l.errorf(sn, "%s: error-status belongs to a turn that fails with error", what)
	}
	if wn := f["when"]; wn != nil {
		t.Condition = WhenRequest(l.pattern(wn, what+" when", trace.Request))
	}
	return t
}

// WhenRequest is a script turn's condition on the request (scripted.Turn's
// Condition): the turn answers only requests that match the pattern, whose
// keys mean what they mean in an expectation (message: new in this request;
// history: anywhere in the run's history so far). A script that ran dry
// says, for such a turn, which part of the request failed it.
//
//	scripted.Turn{Condition: scenarios.WhenRequest(scenarios.Pattern{Step: 2}), Text: "done"}
func WhenRequest(p Pattern) scripted.Condition {
	if p.Kind == "" {
		p.Kind = trace.Request
	}
	c := &requestCondition{p: p}
	c.c = c.p.compile()
	return c
}

// requestCondition is held by pointer: a script asks it of every request,
// and its pattern is matched where it is, never copied, as compiled once
// (c, compiled from p, which nothing changes).
type requestCondition struct {
	p Pattern
	c compiled
}

func (c *requestCondition) Match(req *core.Request) bool {
	ok, _ := requestDiff(&c.p, &c.c, req, false)
	return ok
}

func (c *requestCondition) Explain(req *core.Request) []string { return ExplainRequest(&c.p, req) }

func (c *requestCondition) String() string {
	s := c.p.String()
	return strings.TrimPrefix(strings.TrimPrefix(s, "request"), " ")
}

// ScriptedError is a provider error a script asked for.
type ScriptedError struct {
	Message string
	// Status is the HTTP status crux-sim serve answers the step with, such
	// as 429 or 503 (0: 500). It changes nothing in-process, where the
	// runtime sees the error alone.
	Status int
}

func (e *ScriptedError) Error() string { return "scripted provider error: " + e.Message }

// call reads one tool call. Unless unchecked (for scripting a model that
// calls a tool that does not exist), the tool must be one the agent has.
func (l *loader) call(a *agentDecl, toolNode, argsNode, idNode *node, what string, unchecked bool) scripted.Call {
	name := l.str(toolNode, what+" call")
	if name != "" && !unchecked && !slices.Contains(l.callable(a), name) {
		l.errorf(toolNode, "%s calls %q, but %q has no such tool%s (mark the turn unchecked: true to script a call to a missing tool)", what, name, a.id, toolHint(name, l.callable(a)))
	}
	c := scripted.Call{Name: name, ID: l.str(idNode, what+" call id")}
	if argsNode != nil {
		if s, ok := argsNode.value.(string); ok && argsNode.kind == scalarNode {
			c.Args = s // verbatim, so that malformed JSON can be scripted
		} else {
			c.Args = l.args(a, argsNode, what, unchecked)
		}
	}
	if name == core.WorkToolName && !unchecked && a.hasBackground() {
		l.workArgs(argsNode, toolNode, what)
	}
	return c
}

// workArgs checks a call of the automatic work tool: it names an action,
// and every action but list names the Work. A model may of course get this
// wrong; mark the turn unchecked to script that.
func (l *loader) workArgs(args, at *node, what string) {
	const hint = " (mark the turn unchecked: true to script a model that gets it wrong)"
	if args == nil || args.kind != mapNode {
		if args != nil && args.kind == scalarNode {
			return // verbatim JSON, scripted as written
		}
		l.errorf(at, "%s calls work without args; give at least {action: list}, or {action: result, id: {work-of: TOOL}}%s", what, hint)
		return
	}
	kn, an := args.entry("action")
	if kn == nil {
		l.errorf(args, "%s calls work without an action; give one of %s%s", what, strings.Join(core.WorkActions, ", "), hint)
		return
	}
	action, ok := an.value.(string)
	if an.kind != scalarNode || !ok {
		l.errorf(an, "%s: the work action must be a string, one of %s; found %s", what, strings.Join(core.WorkActions, ", "), an.describe())
		return
	}
	if !slices.Contains(core.WorkActions, action) {
		l.errorf(an, "%s: %q is not a work action%s%s", what, action, suggest(action, core.WorkActions), hint)
		return
	}
	if k, _ := args.entry("id"); k == nil && action != "list" {
		l.errorf(args, "%s: work %s needs the Work's id, such as id: {work-of: TOOL}%s", what, action, hint)
	}
}

func toolHint(name string, tools []string) string {
	if name == core.WorkToolName {
		return " (work is the automatic tool of an agent with a backgroundable child, and it has none)"
	}
	if len(tools) == 0 {
		return " (it has no tools)"
	}
	if s := suggest(name, tools); strings.HasPrefix(s, " (did") {
		return s
	}
	return " (its tools: " + strings.Join(tools, ", ") + ")"
}

// args converts call arguments, replacing {work-of: tool} with a symbolic
// reference to the Work that the most recent call of the tool returned.
func (l *loader) args(a *agentDecl, n *node, what string, unchecked bool) any {
	switch n.kind {
	case mapNode:
		if len(n.keys) == 1 && (scalarString(n.keys[0]) == "worker-of" || scalarString(n.keys[0]) == "task-of") {
			return l.resultField(scalarString(n.keys[0]), n.vals[0], what)
		}
		if len(n.keys) == 1 && scalarString(n.keys[0]) == "work-of" {
			spec := l.str(n.vals[0], what+" work-of")
			tool := spec
			if i := strings.LastIndexByte(spec, '#'); i >= 0 {
				if k, err := strconv.Atoi(spec[i+1:]); err != nil || k < 1 {
					l.errorf(n.vals[0], "%s work-of %q: the number after # must be a positive integer, such as %q", what, spec, spec[:i]+"#1")
					return scripted.WorkOf(spec)
				}
				tool = spec[:i]
			}
			if tool != "" && !unchecked && !slices.Contains(a.backgroundTools(), tool) {
				var kind toolKind
				if d, ok := a.tools[tool]; ok {
					kind = d.kind
				}
				l.errorf(n.vals[0], "%s %s", what, noBackgroundTool(a.id, tool, a.backgroundTools(), kind))
			}
			return scripted.WorkOf(spec)
		}
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[scalarString(k)] = l.args(a, n.vals[i], what, unchecked)
		}
		return m
	case seqNode:
		out := make([]any, len(n.items))
		for i, it := range n.items {
			out[i] = l.args(a, it, what, unchecked)
		}
		return out
	}
	return n.value
}
