package scenarios

// The checks a scenario file and a Go scenario share. Each check has one
// owner here, which words its problem (with the same "did you mean"), so a
// typo reads the same whether the YAML loader or Scenario.Check finds it.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/scripted"
)

// undeclaredAgent is the problem of a script for an agent id that no
// declared agent has.
func undeclaredAgent(id string, declared []string) string {
	return fmt.Sprintf("script for agent %q, which is not declared%s", id, suggest(id, declared))
}

// notAWorkState is the problem of a name that is not a Work state, or "".
func notAWorkState(s string) string {
	if s == "" || lifecycle.State(s).Valid() {
		return ""
	}
	return fmt.Sprintf("%q is not a Work state%s", s, suggest(s, stateNames()))
}

// noBackgroundTool is the problem of a work-of reference to a tool the
// agent has no backgroundable tool of that name for; kind is the tool's
// kind when the agent has it in another form ("tool", "agent"), or "".
func noBackgroundTool(agent, tool string, background []string, kind toolKind) string {
	hint := refHint(tool, background)
	if kind != "" {
		hint = fmt.Sprintf("; %s is a %s, which returns its output, never a work.ref", tool, kind)
	}
	return fmt.Sprintf("refers to the work of %q, but %q has no backgroundable tool of that name%s", tool, agent, hint)
}

// refTool is the tool a work-of spec names: "research" of "research#2".
func refTool(spec string) string {
	if i := strings.LastIndexByte(spec, '#'); i >= 0 {
		return spec[:i]
	}
	return spec
}

// toolKindOf names the kind of a Go tool entry as a scenario file does.
func toolKindOf(t core.ToolEntry) toolKind {
	switch t.(type) {
	case *core.Tool:
		return kindFunc
	case *core.Agent:
		return kindChild
	case core.BackgroundableAgent:
		return kindBackground
	case core.BackgroundableTool:
		return kindBackgroundFunc
	}
	return ""
}

// goAgents are the agents of a Go scenario's tree, by id, in the order a
// walk from the top-level agents (sorted by name) meets them.
func goAgents(s *Scenario) ([]string, map[string]*core.Agent) {
	byID := map[string]*core.Agent{}
	var order []string
	var walk func(a *core.Agent)
	walk = func(a *core.Agent) {
		if a == nil || byID[a.ID] != nil {
			return
		}
		byID[a.ID] = a
		order = append(order, a.ID)
		for _, name := range keys.Sorted(a.Tools) {
			switch t := a.Tools[name].(type) {
			case *core.Agent:
				walk(t)
			case core.BackgroundableAgent:
				walk(t.Agent())
			}
		}
	}
	for _, name := range keys.Sorted(s.Run.Agents) {
		walk(s.Run.Agents[name])
	}
	if s.Platform != nil {
		for _, id := range keys.Sorted(s.Platform.Agents) {
			walk(s.Platform.Agents[id])
		}
	}
	return order, byID
}

// backgroundToolsOf lists an agent's backgroundable tool keys, sorted.
func backgroundToolsOf(a *core.Agent) []string {
	var out []string
	for name, t := range a.Tools {
		if toolKindOf(t).background() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Check finds what the scenario file loader would refuse in a scenario
// built in Go, with the loader's words and its "did you mean": a script for
// an agent that is not declared (Script, ScriptRun), a work-of reference in
// a scripted call to a tool that is not one of the agent's backgroundable
// tools (scripted.WorkOf), a state that is not a Work state (EndWorkIn,
// WorkEnds), and a Work reference (WorkOf) in an expectation to a tool no
// agent has as a backgroundable tool. harness.Run calls it first and runs
// nothing when it finds a problem; call it yourself to fail at once where
// the scenario is built. A scenario loaded from a file was checked already.
func (s *Scenario) Check() error {
	if s.loaded {
		return nil
	}
	order, agents := goAgents(s)
	var problems []error
	add := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	var allBackground []string
	for _, id := range order {
		allBackground = append(allBackground, backgroundToolsOf(agents[id])...)
	}
	allBackground = uniq(allBackground)
	for _, sc := range s.Scripts {
		a := agents[sc.Agent]
		if a == nil {
			if s.Platform == nil || len(s.Platform.Agents) > 0 {
				add("%s", undeclaredAgent(sc.Agent, order))
			}
			continue
		}
		for i, t := range sc.Turns {
			for _, c := range t.Calls {
				forEachWorkOf(c.Args, func(spec string) {
					tool := refTool(spec)
					bg := backgroundToolsOf(a)
					if slices.Contains(bg, tool) {
						return
					}
					var kind toolKind
					if e, ok := a.Tools[tool]; ok {
						kind = toolKindOf(e)
					}
					add("turn %d of %q: %s", i+1, sc.Agent, noBackgroundTool(a.ID, tool, bg, kind))
				})
			}
		}
	}
	kindOf := func(tool string) toolKind {
		for _, id := range order {
			if e, ok := agents[id].Tools[tool]; ok {
				return toolKindOf(e)
			}
		}
		return ""
	}
	for _, e := range s.Expectations {
		we, ok := unnamed(e).(WorkEnds)
		if !ok {
			continue
		}
		if p := we.check(); p != nil {
			problems = append(problems, p)
		}
		if r := we.Work; !r.IsZero() {
			candidates := allBackground
			if r.Agent != "" {
				candidates = nil
				if a := agents[r.Agent]; a != nil {
					candidates = backgroundToolsOf(a)
				}
			}
			if p := refProblem(r.spec(), r, order, candidates, kindOf(r.Tool)); p != "" {
				add("work-ends work%s", p)
			}
		}
	}
	return errors.Join(problems...)
}

// refProblem is the problem of a Work reference (spec, parsed as r) that
// never resolves, or "", worded to follow the name of what holds it: its
// agent is not declared, or the tool is not one of the backgroundable tools
// (candidates) of its agent, or of any agent; kind is the tool's kind where
// some agent has it.
func refProblem(spec string, r Ref, declared, candidates []string, kind toolKind) string {
	if r.Agent != "" && !slices.Contains(declared, r.Agent) {
		return fmt.Sprintf(": agent %q is not declared%s", r.Agent, suggest(r.Agent, declared))
	}
	if slices.Contains(candidates, r.Tool) {
		return ""
	}
	owner := "no agent has a"
	if r.Agent != "" {
		owner = fmt.Sprintf("agent %q has no", r.Agent)
	}
	switch {
	case len(candidates) == 0 && r.Agent != "":
		return fmt.Sprintf(" %q never resolves: %s backgroundable tool %q; it has no backgroundable tools at all", spec, owner, r.Tool)
	case len(candidates) == 0:
		return fmt.Sprintf(" %q never resolves: no agent has a backgroundable tool, so no call returns a work.ref (declare one as TOOL: {background: AGENT})", spec)
	}
	hint := refHint(r.Tool, uniq(candidates))
	if kind != "" && !kind.background() {
		hint = fmt.Sprintf("; %s is a %s, which returns its output, never a work.ref", r.Tool, kind)
	}
	return fmt.Sprintf(" %q never resolves: %s backgroundable tool %q%s", spec, owner, r.Tool, hint)
}

// check reports the states that are not Work states.
func (w WorkEnds) check() error {
	var problems []error
	for _, s := range w.States {
		if p := notAWorkState(s); p != "" {
			problems = append(problems, fmt.Errorf("work-ends: %s", p))
		}
	}
	return errors.Join(problems...)
}

// forEachWorkOf calls f with every scripted.WorkOf in call arguments.
func forEachWorkOf(v any, f func(spec string)) {
	switch a := v.(type) {
	case scripted.WorkOf:
		f(string(a))
	case map[string]any:
		for _, k := range keys.Sorted(a) {
			forEachWorkOf(a[k], f)
		}
	case []any:
		for _, x := range a {
			forEachWorkOf(x, f)
		}
	}
}
