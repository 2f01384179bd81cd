package scenarios

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/core/platform"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/internal/inputfile"
	"github.com/crux-sim/crux-sim/scripted"
)

// ErrLoad is wrapped by every scenario-file error.
var ErrLoad = errors.New("bad scenario file")

// MaxFileSize is the largest scenario file LoadFile and Load read, in
// bytes; crux-sim's --max-file-size sets it. A scenario is a few kilobytes:
// the limit is there so that a file from elsewhere cannot make the loader
// spend without bound.
var MaxFileSize int64 = 4 << 20

// fileLimit is how LoadFile reads: only a regular file, at most
// MaxFileSize bytes.
func fileLimit() inputfile.Limit {
	return inputfile.Limit{Bytes: MaxFileSize, What: "a scenario file", Raise: "--max-file-size (scenarios.MaxFileSize in Go)"}
}

// LoadFile reads a scenario file. Only a regular file is read, and at most
// MaxFileSize bytes of it: a device such as /dev/zero, a FIFO or a
// directory is refused before anything is read.
func LoadFile(path string) (*Scenario, error) {
	src, err := inputfile.Read(path, fileLimit())
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrLoad, path, err)
	}
	return Load(path, src)
}

// Load reads a scenario from YAML. name is the file name used in errors.
// Every problem is reported as a *LoadError, at its line and column.
func Load(name string, src []byte) (*Scenario, error) {
	if int64(len(src)) > MaxFileSize {
		return nil, &LoadError{File: name, Problems: []Problem{{Line: 1, Col: 1, Message: (&inputfile.TooLargeError{Limit: fileLimit()}).Error()}}}
	}
	root, err := parseYAML(src)
	if err != nil {
		var pe *posError
		if errors.As(err, &pe) {
			return nil, &LoadError{File: name, Problems: []Problem{{Line: pe.line, Col: pe.col, Message: pe.msg}}}
		}
		return nil, &LoadError{File: name, Problems: []Problem{{Line: 1, Col: 1, Message: err.Error()}}}
	}
	l := &loader{decoder: decoder{file: name}, agents: map[string]*agentDecl{}}
	sc := l.scenario(root)
	if err := l.err(); err != nil {
		return nil, err
	}
	sc.Source = name
	sum := sha256.Sum256(src)
	sc.Digest = hex.EncodeToString(sum[:])
	return sc, nil
}

// Is lets errors.Is(err, ErrLoad) hold for every *LoadError.
func (e *LoadError) Is(target error) bool { return target == ErrLoad }

type loader struct {
	decoder
	agents map[string]*agentDecl
	order  []string
	// runNames maps the run's names for its top-level agents to their ids,
	// to catch a run name used where an agent id belongs.
	runNames map[string]string
	// expectsPrepareFailure: the file has a prepare-fails expectation, so
	// agents that preparation rejects are what it is about, not mistakes.
	expectsPrepareFailure bool
	// platform: the file describes a platform run, so its agents may call
	// the platform's tools.
	platform bool
}

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

type toolDecl struct {
	kind  string // tool, background-tool, agent, background
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
		if t.kind == "background" || t.kind == "background-tool" {
			return true
		}
	}
	return false
}

func (a *agentDecl) backgroundTools() []string {
	var out []string
	for n, t := range a.tools {
		if t.kind == "background" || t.kind == "background-tool" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (l *loader) scenario(root *node) *Scenario {
	sc := &Scenario{}
	if root.kind != mapNode {
		l.errorf(root, "a scenario file is a mapping with the keys name, agents and run (and optionally description, tags, options, script, faults, expect); found %s", root.describe())
		return sc
	}
	f := l.fields(root, "the scenario", scenarioKeys...)
	l.platform = f["platform"] != nil
	if en := f["expect"]; en != nil && en.kind == seqNode {
		for _, it := range en.items {
			if k, _ := it.entry("prepare-fails"); k != nil {
				l.expectsPrepareFailure = true
			}
		}
	}
	if f["name"] == nil {
		l.errorf(root, "missing key \"name\": every scenario has a name, such as name: research-coordinator")
	}
	sc.Name = l.str(f["name"], "name")
	sc.Description = l.str(f["description"], "description")
	sc.Tags = l.strs(f["tags"], "tags")
	if f["agents"] == nil {
		l.errorf(root, "missing key \"agents\": a scenario declares its agents, such as agents: {research-agent: {prompt: ...}}")
	}
	switch {
	case f["run"] == nil && f["platform"] == nil:
		l.errorf(root, "missing key \"run\": a scenario says which agents run, such as run: {agents: {coordinator: research-coordinator}} (or, for the platform of seed 03, which sessions start: platform: {sessions: [{agent: coordinator, send: [go]}]})")
	case f["run"] != nil && f["platform"] != nil:
		k, _ := root.entry("platform")
		l.errorf(k, "a scenario has run (top-level agents) or platform (sessions on the platform), not both")
	}
	if f["agents"] == nil || !l.declareAgents(f["agents"]) {
		// Every other section names agents; without them, each name
		// would be one more problem that is really this one.
		return sc
	}
	if f["run"] != nil {
		sc.Run = l.run(f["run"])
	}
	if f["platform"] != nil {
		sc.Platform = l.platformSection(f["platform"])
		sc.Run.ID = "platform"
	}
	sc.Options = l.options(f["options"])
	sc.Scripts = l.scripts(f["script"])
	sc.Faults = l.faults(f["faults"])
	sc.Expectations = l.expectations(f["expect"])
	return sc
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
	a.agent.MaxSteps = l.integer(f["max-steps"], what+" max-steps", 1)
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
			p.Render = func(input any) (string, error) {
				var b bytes.Buffer
				if err := tmpl.Execute(&b, input); err != nil {
					return "", err
				}
				return b.String(), nil
			}
		}
	}
	return p
}

func (l *loader) tool(a *agentDecl, name string, n *node) (core.ToolEntry, toolDecl, bool) {
	what := fmt.Sprintf("tool %q of %q", name, a.id)
	kind, v, ok := l.oneOf(n, what, "tool kind", toolKinds...)
	if !ok {
		// Declare it as the kind its first key names, if any, so that
		// its uses are not reported too.
		if n.kind == mapNode && len(n.keys) > 0 {
			if k := scalarString(n.keys[0]); slices.Contains(toolKinds, k) {
				return nil, toolDecl{kind: k}, false
			} else if meant := closest(k, toolKinds); meant != "" {
				return nil, toolDecl{kind: meant}, false
			}
		}
		return nil, toolDecl{}, false
	}
	switch kind {
	case "agent", "background":
		id := l.str(v, what+" "+kind)
		child, ok := l.agents[id]
		if !ok {
			if id != "" {
				l.errorf(v, "%s names agent %q, which is not declared%s", what, id, suggest(id, l.order))
			}
			return nil, toolDecl{kind: kind}, false
		}
		if kind == "agent" {
			return child.agent, toolDecl{kind: kind, child: id}, true
		}
		return core.Backgroundable(child.agent), toolDecl{kind: kind, child: id}, true
	default:
		t := l.funcTool(v, what)
		if kind == "background-tool" {
			return core.BackgroundTool(name, t), toolDecl{kind: kind}, true
		}
		return t, toolDecl{kind: kind}, true
	}
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

func (l *loader) run(n *node) Run {
	f := l.fields(n, "run", runKeys...)
	r := Run{ID: l.str(f["id"], "run id"), Model: l.str(f["model"], "run model"), Agents: map[string]*core.Agent{}}
	an := f["agents"]
	switch {
	case an == nil:
		l.errorf(n, "run is missing key \"agents\": the top-level agents by name, such as {coordinator: research-coordinator}")
	case an.kind != mapNode:
		l.errorf(an, "run agents must be a mapping from name to agent id, found %s", an.describe())
	case len(an.keys) == 0:
		l.errorf(an, "run agents is empty: name at least one top-level agent, such as {coordinator: research-coordinator}")
	default:
		for i, k := range an.keys {
			id := l.str(an.vals[i], "run agent")
			a, ok := l.agents[id]
			if !ok {
				if id != "" {
					l.errorf(an.vals[i], "run agent %q names agent %q, which is not declared%s", scalarString(k), id, suggest(id, l.order))
				}
				continue
			}
			r.Agents[scalarString(k)] = a.agent
			if l.runNames == nil {
				l.runNames = map[string]string{}
			}
			l.runNames[scalarString(k)] = id
		}
	}
	if cn := f["context"]; cn != nil {
		r.Context = cn.toAny()
	}
	if r.ID == "" {
		r.ID = "run"
	}
	return r
}

func (l *loader) options(n *node) Options {
	f := l.fields(n, "options", optionKeys...)
	return Options{
		MaxConcurrent:  l.integer(f["max-concurrent"], "options max-concurrent", 1),
		MaxOutstanding: l.integer(f["max-outstanding"], "options max-outstanding", 1),
		MaxSteps:       l.integer(f["max-steps"], "options max-steps", 1),
		Settle:         l.boolean(f["settle"], "options settle"),
	}
}

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
				l.errorf(k, "script for agent %q, which is not declared%s", id, suggest(id, l.order))
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
		p := l.pattern(wn, what+" when", trace.Request)
		t.When = func(req *core.Request) bool { return MatchRequest(&p, req) }
	}
	return t
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
					return scripted.WorkID(spec)
				}
				tool = spec[:i]
			}
			if tool != "" && !unchecked && !slices.Contains(a.backgroundTools(), tool) {
				hint := refHint(tool, a.backgroundTools())
				if d, ok := a.tools[tool]; ok && d.kind != "" {
					hint = fmt.Sprintf("; %s is a %s, which returns its output, never a work.ref", tool, kindName(d.kind))
				}
				l.errorf(n.vals[0], "%s refers to the work of %q, but %q has no backgroundable tool of that name%s", what, tool, a.id, hint)
			}
			return scripted.WorkID(spec)
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

func refHint(tool string, tools []string) string {
	if len(tools) == 0 {
		return "; it has none, so the reference can never resolve"
	}
	if s := suggest(tool, tools); strings.HasPrefix(s, " (did") {
		return s
	}
	return " (its backgroundable tools: " + strings.Join(tools, ", ") + ")"
}

func (l *loader) faults(n *node) []Fault {
	var out []Fault
	for i, it := range l.seq(n, "faults") {
		what := fmt.Sprintf("fault %d", i+1)
		kind, v, ok := l.oneOf(it, what, "fault", faultKinds...)
		if !ok {
			continue
		}
		switch kind {
		case "provider-error", "latency":
			f := l.fields(v, what+" ("+kind+")", union(providerFaultKeys, latencyFaultKeys)...)
			fault := Fault{Kind: FaultProviderError, Agent: l.agentRef(f["agent"], what+" agent"), Step: l.integer(f["step"], what+" step", 1),
				Run: l.integer(f["run"], what+" run", 1), Probability: l.probability(f["probability"], what+" probability")}
			if f["agent"] == nil {
				l.errorf(v, "%s is missing key \"agent\"", what)
			}
			if kind == "latency" {
				fault.Kind = FaultLatency
				lo, loKey := f["min"], "min"
				if lo == nil {
					lo, loKey = f["latency"], "latency"
				} else if f["latency"] != nil {
					l.duration(f["latency"], what+" latency") // min wins; latency is still checked
				}
				fault.Latency, fault.LatencyMax = l.durationRange(lo, f["max"], what, loKey, "max")
				if f["latency"] == nil && f["min"] == nil {
					l.errorf(v, "%s needs latency, such as latency: 2s, or min and max to draw it from a range", what)
				}
				if f["message"] != nil {
					l.errorf(f["message"], "%s: a latency fault has no message", what)
				}
			} else {
				fault.Message = l.str(f["message"], what+" message")
				for _, k := range []string{"latency", "min", "max"} {
					if f[k] != nil {
						l.errorf(f[k], "%s: a provider error has no %s", what, k)
					}
				}
			}
			out = append(out, fault)
		case "crash":
			f := l.fields(v, what+" (crash)", crashFaultKeys...)
			fault := Fault{Kind: FaultCrash, Jitter: l.jitter(f["jitter"], what+" jitter"), Probability: l.probability(f["probability"], what+" probability")}
			fault.Delay, fault.DelayMax = l.durationRange(f["delay"], f["max-delay"], what, "delay", "max-delay")
			if f["after"] != nil {
				p := l.pattern(f["after"], what+" after", "")
				fault.After = &p
			}
			out = append(out, fault)
		default:
			f := l.fields(v, what+" ("+kind+")", actionFaultKeys...)
			fault := Fault{Kind: FaultAction, Action: kind, Work: l.ref(f["work"], what+" work"), Message: l.str(f["message"], what+" message"),
				Jitter: l.jitter(f["jitter"], what+" jitter"), Probability: l.probability(f["probability"], what+" probability")}
			if f["work"] == nil {
				l.errorf(v, "%s is missing key \"work\": which Work to %s, such as work: research", what, kind)
			}
			if kind == "send" && fault.Message == "" {
				l.errorf(v, "%s: send needs a non-empty message", what)
			}
			if kind != "send" && f["message"] != nil {
				l.errorf(f["message"], "%s: only send has a message", what)
			}
			if f["after"] != nil {
				p := l.pattern(f["after"], what+" after", "")
				fault.After = &p
			}
			out = append(out, fault)
		}
	}
	return out
}

func (l *loader) agentRef(n *node, what string) string {
	id := l.str(n, what)
	if id != "" {
		if _, ok := l.agents[id]; !ok {
			if real, isRunName := l.runNames[id]; isRunName {
				l.errorf(n, "%s %q is the run's name for agent %q; patterns, faults and outcomes name agents by id, so write %q", what, id, real, real)
			} else {
				l.errorf(n, "%s %q is not a declared agent%s", what, id, suggest(id, l.order))
			}
		}
	}
	return id
}

// ref reads a symbolic Work reference ("tool", "tool#2", "agent/tool") and
// checks that it can resolve: the tool is backgroundable on some agent.
func (l *loader) ref(n *node, what string) Ref {
	if n == nil {
		return Ref{}
	}
	s := l.str(n, what)
	if s == "" {
		return Ref{}
	}
	r, err := ParseRef(s)
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return Ref{}
	}
	var candidates []string
	for _, id := range l.order {
		a := l.agents[id]
		if r.Agent != "" && r.Agent != id {
			continue
		}
		candidates = append(candidates, a.backgroundTools()...)
	}
	if r.Agent != "" {
		if _, ok := l.agents[r.Agent]; !ok {
			l.errorf(n, "%s: agent %q is not declared%s", what, r.Agent, suggest(r.Agent, l.order))
			return r
		}
	}
	if !slices.Contains(candidates, r.Tool) {
		owner := "no agent has a"
		if r.Agent != "" {
			owner = fmt.Sprintf("agent %q has no", r.Agent)
		}
		switch {
		case len(candidates) == 0 && r.Agent != "":
			l.errorf(n, "%s %q never resolves: %s backgroundable tool %q; it has no backgroundable tools at all", what, s, owner, r.Tool)
		case len(candidates) == 0:
			l.errorf(n, "%s %q never resolves: no agent has a backgroundable tool, so no call returns a work.ref (declare one as TOOL: {background: AGENT})", what, s)
		default:
			hint := refHint(r.Tool, uniq(candidates))
			if kind := l.toolKind(r.Tool); kind != "" {
				hint = fmt.Sprintf("; %s is a %s, which returns its output, never a work.ref", r.Tool, kindName(kind))
			}
			l.errorf(n, "%s %q never resolves: %s backgroundable tool %q%s", what, s, owner, r.Tool, hint)
		}
	}
	return r
}

// union reads a provider-error or latency fault with both kinds' keys, so
// that a key of the other kind gets a message that says so.
func union(a, b []string) []string {
	return uniq(append(slices.Clone(a), b...))
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

func (l *loader) expectations(n *node) []Expectation {
	var out []Expectation
	for i, it := range l.seq(n, "expect") {
		what := fmt.Sprintf("expectation %d", i+1)
		name := ""
		if k, v := it.entry("name"); k != nil && it.kind == mapNode {
			name = l.str(v, what+" name")
			it = withoutKey(it, "name")
		}
		var cond *Pattern
		if k, v := it.entry("if"); k != nil && it.kind == mapNode {
			p := l.pattern(v, what+" if", "")
			cond = &p
			it = withoutKey(it, "if")
		}
		kind, v, ok := l.oneOf(it, what, "expectation", expectationKinds...)
		if !ok {
			continue
		}
		e := l.expectation(kind, v, what+" ("+kind+")")
		if e == nil {
			continue
		}
		if cond != nil {
			e = If{When: *cond, Then: e}
		}
		if name != "" {
			e = Named{Name: name, Expectation: e}
		}
		out = append(out, e)
	}
	return out
}

func (l *loader) expectation(kind string, v *node, what string) Expectation {
	switch kind {
	case "ordered":
		return InOrder(l.patterns(v, what))
	case "unordered":
		return InAnyOrder(l.patterns(v, what))
	case "subset":
		f := l.fields(v, what, subsetKeys...)
		if f["of"] == nil {
			l.errorf(v, "%s is missing key \"of\": the pattern of the entries it is about, such as of: {work-call: {agent: AGENT}}", what)
		}
		if f["allowed"] == nil {
			l.errorf(v, "%s is missing key \"allowed\": the patterns every entry it is about must match", what)
		}
		if f["of"] == nil || f["allowed"] == nil {
			return nil
		}
		return Subset{Of: l.pattern(f["of"], what+" of", ""), Allowed: l.patterns(f["allowed"], what+" allowed")}
	case "never":
		if v.kind == seqNode {
			return Never{Patterns: l.patterns(v, what)}
		}
		f := l.fields(v, what, neverKeys...)
		nv := Never{Patterns: l.patterns(f["patterns"], what+" patterns")}
		if f["after"] != nil {
			p := l.pattern(f["after"], what+" after", "")
			nv.After = &p
		}
		return nv
	case "count":
		f := l.fields(v, what, countKeys...)
		c := Count{Pattern: l.pattern(f["match"], what+" match", ""), Min: l.integer(f["min"], what+" min", 0), Max: -1}
		if f["match"] == nil {
			l.errorf(v, "%s is missing key \"match\": the pattern to count, such as match: {request: {agent: AGENT}}", what)
		}
		if f["max"] != nil {
			c.Max = l.integer(f["max"], what+" max", 0)
			if c.Max < c.Min {
				l.errorf(f["max"], "%s: max %d is below min %d, so no run can satisfy it", what, c.Max, c.Min)
			}
		}
		return c
	case "output-only-via-result":
		if v.kind == scalarNode {
			return OutputOnlyViaResult{Tool: l.bgTool(v, what)}
		}
		f := l.fields(v, what, outputOnlyKeys...)
		return OutputOnlyViaResult{Tool: l.bgTool(f["tool"], what+" tool"), AllowUnread: l.boolean(f["allow-unread"], what+" allow-unread")}
	case "foreground-output":
		return ForegroundOutput{Tool: l.childTool(v, what)}
	case "work-ends":
		f := l.fields(v, what, workEndsKeys...)
		w := WorkEnds{Work: l.ref(f["work"], what+" work"), States: l.strs(f["in"], what+" in")}
		if f["work"] == nil || f["in"] == nil {
			l.errorf(v, "%s needs work and in, such as {work: research, in: [completed]}", what)
		}
		for j, s := range w.States {
			if !lifecycle.State(s).Valid() {
				l.errorf(f["in"].items[j], "%s: %q is not a Work state%s", what, s, suggest(s, stateNames()))
			}
		}
		return w
	case "outcome":
		f := l.fields(v, what, outcomeKeys...)
		if f["agent"] == nil {
			l.errorf(v, "%s is missing key \"agent\": the top-level agent whose run it is about", what)
		}
		return Outcome{Agent: l.agentRef(f["agent"], what+" agent"), Contains: l.str(f["contains"], what+" contains"),
			Equals: l.str(f["equals"], what+" equals"), Failed: l.optBool(f["failed"], what+" failed")}
	case "prepare-fails":
		f := l.fields(v, what, prepareFailsKeys...)
		return PrepareFails{Contains: l.str(f["contains"], what+" contains")}
	case "tasks-end", "parents-first", "finding":
		if !l.platform {
			l.errorf(v, "%s is about durable tasks and findings of the platform; it belongs in a scenario with a platform section", what)
		}
		return l.platformExpectation(kind, v, what)
	}
	return nil
}

func withoutKey(n *node, key string) *node {
	c := *n
	c.keys, c.vals = nil, nil
	for i, k := range n.keys {
		if scalarString(k) != key {
			c.keys = append(c.keys, k)
			c.vals = append(c.vals, n.vals[i])
		}
	}
	return &c
}

func stateNames() []string {
	out := make([]string, len(lifecycle.States))
	for i, s := range lifecycle.States {
		out[i] = string(s)
	}
	return out
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
		switch kind := l.toolKind(name); {
		case kind != "":
			hint = fmt.Sprintf("; %s is a %s, which returns its output, never a work.ref", name, kindName(kind))
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
			if d.kind == "agent" || d.kind == "background" {
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

// toolKind returns the kind of the first declared tool of that name.
func (l *loader) toolKind(name string) string {
	for _, id := range l.order {
		if d, ok := l.agents[id].tools[name]; ok {
			return d.kind
		}
	}
	return ""
}

func kindName(kind string) string {
	switch kind {
	case "agent":
		return "foreground child agent"
	case "tool":
		return "function tool"
	}
	return kind + " tool"
}
