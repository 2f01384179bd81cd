package scenarios

// The agents section: agents, their prompts and their tools.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/didyoumean"
	"github.com/crux-sim/crux-sim/platform"
)

// agentDecl is an agent as declared, before and after it is built.
type agentDecl struct {
	id    string
	at    *node
	agent *core.Agent
	// tools by name: their kind and, for children, the child's id.
	tools map[string]toolDecl
	// declaresOutput: the prompt has an output schema.
	declaresOutput bool
}

// toolKind is how a tool of a scenario file is declared: the single key
// of its entry.
type toolKind string

// The tool kinds.
const (
	// kindFunc is a function tool with scripted behaviour.
	kindFunc toolKind = "tool"
	// kindBackgroundFunc is a function tool the model may run in the
	// background.
	kindBackgroundFunc toolKind = "background-tool"
	// kindChild is a foreground child agent.
	kindChild toolKind = "agent"
	// kindBackground is a backgroundable child agent.
	kindBackground toolKind = "background"
)

// toolKindsInOrder are the tool kinds, in the order the file format
// documents them.
var toolKindsInOrder = []toolKind{kindFunc, kindBackgroundFunc, kindChild, kindBackground}

func toolKindKeys() []string {
	keys := make([]string, len(toolKindsInOrder))
	for i, k := range toolKindsInOrder {
		keys[i] = string(k)
	}
	return keys
}

// background reports whether a call of the tool may return a work.ref.
func (k toolKind) background() bool { return k == kindBackground || k == kindBackgroundFunc }

// child reports whether the tool runs a child agent.
func (k toolKind) child() bool { return k == kindChild || k == kindBackground }

// String names the kind for people.
func (k toolKind) String() string {
	switch k {
	case kindChild:
		return "foreground child agent"
	case kindFunc:
		return "function tool"
	}
	return string(k) + " tool"
}

type toolDecl struct {
	kind  toolKind
	child string
}

func (a *agentDecl) toolNames() []string {
	names := make([]string, 0, len(a.tools)+1)
	for n := range a.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	if a.hasBackground() {
		names = append(names, core.WorkToolName)
	}
	return names
}

// callable lists the tools a script of the agent may call: its own, and in
// a platform scenario the platform's tools, which sessions are offered as
// their kind allows.
func (l *loader) callable(a *agentDecl) []string {
	if !l.platform {
		return a.toolNames()
	}
	return uniq(append(a.toolNames(), platform.ToolNames()...))
}

func (a *agentDecl) hasBackground() bool {
	for _, t := range a.tools {
		if t.kind.background() {
			return true
		}
	}
	return false
}

func (a *agentDecl) backgroundTools() []string {
	var out []string
	for n, t := range a.tools {
		if t.kind.background() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// declareAgents makes every agent first, so that tools can refer to agents
// declared after them, then fills them in.
func (l *loader) declareAgents(n *node) bool {
	if n.kind != mapNode || len(n.keys) == 0 {
		l.errorf(n, "agents must be a mapping from agent id to agent, such as {research-agent: {prompt: ...}}; found %s", n.describe())
		return false
	}
	for _, k := range n.keys {
		id := scalarString(k)
		if id == "" || k.value == nil {
			l.errorf(k, "an agent id must be a non-empty name, such as research-agent; found %s", k.describe())
		}
		l.agents[id] = &agentDecl{id: id, at: k, agent: &core.Agent{ID: id}, tools: map[string]toolDecl{}}
		l.order = append(l.order, id)
	}
	for i, k := range n.keys {
		l.agent(l.agents[scalarString(k)], n.vals[i])
	}
	return true
}

func (l *loader) agent(a *agentDecl, n *node) {
	what := "agent " + strconv.Quote(a.id)
	f := l.fields(n, what, agentKeys...)
	a.agent.Description = l.str(f["description"], what+" description")
	a.agent.MaxSteps = l.budget(f["max-steps"], what+" max-steps")
	a.agent.Prompt = l.prompt(a, f["prompt"])
	if tn := f["tools"]; tn != nil {
		if tn.kind != mapNode {
			l.errorf(tn, "%s tools must be a mapping from tool name to tool, found %s", what, tn.describe())
			return
		}
		a.agent.Tools = core.Tools{}
		for i, k := range tn.keys {
			name := scalarString(k)
			entry, decl, ok := l.tool(a, name, tn.vals[i])
			if ok {
				a.agent.Tools[name] = entry
			}
			// A tool with a problem is still declared, with the kind it
			// was written as, so that calls and references to it are
			// not reported again.
			a.tools[name] = decl
		}
		if _, authored := a.tools[core.WorkToolName]; authored && a.hasBackground() && !l.expectsPrepareFailure {
			k, _ := tn.entry(core.WorkToolName)
			l.errorf(k, "%s has a backgroundable tool (%s), so it gets the automatic work tool; an authored tool cannot be named %q (rename it; or, to check that preparation rejects it, add a prepare-fails expectation)", what, strings.Join(a.backgroundTools(), ", "), core.WorkToolName)
		}
	}
}

func (l *loader) prompt(a *agentDecl, n *node) core.Prompt {
	what := "the prompt of " + strconv.Quote(a.id)
	f := l.fields(n, what, promptKeys...)
	p := core.Prompt{ID: l.str(f["id"], what+" id"), System: l.str(f["system"], what+" system")}
	p.Input = l.schema(f["input"], what+" input schema")
	p.Output = l.schema(f["output"], what+" output schema")
	// A declared output, even one with a problem of its own, makes the
	// agent's structured outputs legitimate.
	a.declaresOutput = f["output"] != nil
	if tn := f["template"]; tn != nil {
		text := l.str(tn, what+" template")
		tmpl, err := template.New(a.id).Option("missingkey=error").Parse(text)
		if err != nil {
			l.errorf(tn, "%s template does not parse: %s", what, templateError(a.id, err))
		} else {
			p.Render = renderer(tmpl)
		}
	}
	return p
}

// renderer renders a prompt's template. A template of text and plain
// fields ({{.question}}), the common case, is read once, when it loads:
// given a map whose fields it names all hold strings, the message is those
// strings between the text, written as executing the template would write
// them, in one string (the value itself for a template that is one field)
// without executing it. Any other template or input executes the template.
func renderer(tmpl *template.Template) func(input any) (string, error) {
	parts, ok := plainFields(tmpl)
	// Executions are bounded (plainFields reads the tree as written, so
	// it goes first).
	boundTemplate(tmpl)
	execute := func(input any) (string, error) { return executeBounded(tmpl, input) }
	if !ok {
		return execute
	}
	return func(input any) (string, error) {
		m, ok := input.(map[string]any)
		if !ok {
			return execute(input)
		}
		if len(parts) == 1 && parts[0].field != "" {
			if s, ok := m[parts[0].field].(string); ok {
				return s, nil
			}
			return execute(input)
		}
		n := 0
		for _, part := range parts {
			if part.field == "" {
				n += len(part.text)
				continue
			}
			s, ok := m[part.field].(string)
			if !ok {
				return execute(input)
			}
			n += len(s)
		}
		var b strings.Builder
		b.Grow(n)
		for _, part := range parts {
			if part.field == "" {
				b.WriteString(part.text)
			} else {
				b.WriteString(m[part.field].(string))
			}
		}
		return b.String(), nil
	}
}

// templatePart is a piece of a template of text and plain fields: its text,
// or the field it prints.
type templatePart struct {
	text, field string
}

// plainFields returns the template's pieces when it is only text and
// actions that print one field of dot ({{.question}}); false for anything
// else (pipelines, variables, functions, control structures, nested
// fields, other templates).
func plainFields(tmpl *template.Template) ([]templatePart, bool) {
	if tmpl.Tree == nil || tmpl.Tree.Root == nil || len(tmpl.Templates()) > 1 {
		return nil, false
	}
	var parts []templatePart
	for _, n := range tmpl.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			parts = append(parts, templatePart{text: string(n.Text)})
		case *parse.ActionNode:
			p := n.Pipe
			if p == nil || p.IsAssign || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
				return nil, false
			}
			f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
			if !ok || len(f.Ident) != 1 {
				return nil, false
			}
			parts = append(parts, templatePart{field: f.Ident[0]})
		default:
			return nil, false
		}
	}
	return parts, len(parts) > 0
}

func (l *loader) tool(a *agentDecl, name string, n *node) (core.ToolEntry, toolDecl, bool) {
	what := fmt.Sprintf("tool %q of %q", name, a.id)
	key, v, ok := l.oneOf(n, what, "tool kind", toolKinds...)
	if !ok {
		// Declare it as the kind its first key names, if any, so that
		// its uses are not reported too.
		if n.kind == mapNode && len(n.keys) > 0 {
			if k := scalarString(n.keys[0]); slices.Contains(toolKinds, k) {
				return nil, toolDecl{kind: toolKind(k)}, false
			} else if meant := didyoumean.Closest(k, toolKinds); meant != "" {
				return nil, toolDecl{kind: toolKind(meant)}, false
			}
		}
		return nil, toolDecl{}, false
	}
	kind := toolKind(key)
	if kind.child() {
		id := l.str(v, what+" "+key)
		child, ok := l.agents[id]
		if !ok {
			if id != "" {
				l.errorf(v, "%s names agent %q, which is not declared%s", what, id, suggest(id, l.order))
			}
			return nil, toolDecl{kind: kind}, false
		}
		if kind == kindChild {
			return child.agent, toolDecl{kind: kind, child: id}, true
		}
		return core.Backgroundable(child.agent), toolDecl{kind: kind, child: id}, true
	}
	t := l.funcTool(v, what)
	if kind == kindBackgroundFunc {
		return core.BackgroundTool(name, t), toolDecl{kind: kind}, true
	}
	return t, toolDecl{kind: kind}, true
}

// funcTool builds a tool with scripted behaviour: a fixed result (or the
// input echoed), or an error, after optional virtual latency.
func (l *loader) funcTool(n *node, what string) *core.Tool {
	f := l.fields(n, what, funcToolKeys...)
	t := &core.Tool{Description: l.str(f["description"], what+" description"), Input: l.schema(f["input"], what+" input schema")}
	var result any
	if rn := f["result"]; rn != nil {
		result = rn.toAny()
	}
	echo := l.boolean(f["echo"], what+" echo")
	errText := l.str(f["error"], what+" error")
	latency := l.duration(f["latency"], what+" latency")
	if f["result"] != nil && (echo || errText != "") {
		l.errorf(f["result"], "%s: give one of result, echo or error", what)
	}
	t.Run = func(ctx context.Context, call core.ToolCall, input any) (any, error) {
		if latency > 0 {
			if err := core.Sleep(ctx, latency); err != nil {
				return nil, err
			}
		}
		switch {
		case errText != "":
			return nil, errors.New(errText)
		case echo:
			return input, nil
		}
		return result, nil
	}
	return t
}

func refHint(tool string, tools []string) string {
	if len(tools) == 0 {
		return "; it has none, so the reference can never resolve"
	}
	if s := suggest(tool, tools); strings.HasPrefix(s, " (did") {
		return s
	}
	return " (its backgroundable tools: " + strings.Join(tools, ", ") + ")"
}

// bgTool reads the name of a backgroundable tool of some agent.
func (l *loader) bgTool(n *node, what string) string {
	name := l.str(n, what)
	var all []string
	for _, id := range l.order {
		all = append(all, l.agents[id].backgroundTools()...)
	}
	if name != "" && !slices.Contains(all, name) {
		hint := refHint(name, uniq(all))
		switch kind := l.toolKindOf(name); {
		case kind != "":
			hint = fmt.Sprintf("; %s is a %s, which returns its output, never a work.ref", name, kind)
		case len(all) == 0:
			hint = "; no agent has any backgroundable tool"
		}
		l.errorf(n, "%s: no agent has a backgroundable tool %q%s", what, name, hint)
	}
	return name
}

// childTool reads the name of a foreground or backgroundable child tool.
func (l *loader) childTool(n *node, what string) string {
	name := l.str(n, what)
	var all []string
	for _, id := range l.order {
		for t, d := range l.agents[id].tools {
			if d.kind.child() {
				all = append(all, t)
			}
		}
	}
	if name != "" && !slices.Contains(all, name) {
		l.errorf(n, "%s: no agent has a child tool %q%s", what, name, suggest(name, uniq(all)))
	}
	return name
}

// templateError drops text/template's "template: NAME:" prefix, which names
// the template after the agent, and says "line N" instead.
func templateError(name string, err error) string {
	msg := strings.TrimPrefix(err.Error(), "template: ")
	if rest, ok := strings.CutPrefix(msg, name+":"); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if _, err := strconv.Atoi(rest[:i]); err == nil {
				return "line " + rest[:i] + " of the template:" + rest[i+1:]
			}
		}
	}
	return msg
}

// toolKindOf returns the kind of the first declared tool of that name
// ("" when none is declared).
func (l *loader) toolKindOf(name string) toolKind {
	for _, id := range l.order {
		if d, ok := l.agents[id].tools[name]; ok {
			return d.kind
		}
	}
	return ""
}
